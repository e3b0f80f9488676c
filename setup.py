"""Build hook for the optional C scanner; all metadata lives in pyproject.toml.

``traceviz.parse._scan`` is optional: where no C compiler is found the build skips it
(``optional=True``) and traceviz parses with its pure-Python path.
"""

import os

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "traceviz.parse._scan",
            ["traceviz/parse/_scan.c"],
            extra_compile_args=[] if os.name == "nt" else ["-O2"],
            optional=True,
        )
    ]
)
