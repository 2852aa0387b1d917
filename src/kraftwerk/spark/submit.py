"""Entry file for ``spark-submit``: runs the ``kraftwerk`` command inside the submitted driver.

``spark-submit [spark options] $(python -c 'import kraftwerk.spark.submit as m; print(m.__file__)')
pipeline scan --log-dirs ... --out ...`` — without ``--master`` on the kraftwerk command line the
session keeps the master and settings spark-submit gave it.
"""

from __future__ import annotations

import sys

from kraftwerk.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
