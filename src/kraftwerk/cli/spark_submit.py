"""Entry file for ``spark-submit``: runs the ``kraftwerk`` command inside the submitted driver.

``kraftwerk pipeline ... --print-spark-submit`` prints the whole command. Without ``--master`` on the
kraftwerk command line, the session keeps the master and ``spark.pyspark.python`` that spark-submit
gave it and ships kraftwerk's code to the executors as a direct run does. Nothing imports this file:
it is a script, in the top layer because it runs the command line.
"""

from __future__ import annotations

import sys

from kraftwerk.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
