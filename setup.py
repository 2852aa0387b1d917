"""Builds the optional compiled twins of kraftwerk's hot paths (Cython); see ``kraftwerk.native``.

An extension that fails to build is skipped (``optional``): the pure-Python path then runs, and
``tests/test_native.py`` fails, so a build that silently lost its extensions is caught.
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("kraftwerk.records._cbatch", ["src/kraftwerk/records/_cbatch.pyx"], libraries=["z"],
              optional=True),
    Extension("kraftwerk.protocol._ccodec", ["src/kraftwerk/protocol/_ccodec.pyx"], optional=True),
    Extension("kraftwerk.image._cdelta", ["src/kraftwerk/image/_cdelta.pyx"], optional=True),
])
