"""onmt-optimal: optimal beam search (Huang, Zhao & Ma, 2017) for OpenNMT-py.

Install into an environment that already has torch (>= 2.1) and OpenNMT-py 3.5.1 (see the Makefile: OpenNMT-py
is installed with --no-deps because its torch<2.3 pin would downgrade torch). This package never asks pip
for torch or OpenNMT-py, so installing it never downgrades torch.
"""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent


class build_py_with_pth(build_py):
    """Ship onmt_optimal.pth at the top of site-packages (it installs the import hook)."""

    def run(self):
        super().run()
        self.copy_file(str(HERE / "onmt_optimal.pth"), str(Path(self.build_lib) / "onmt_optimal.pth"))


setup(
    name="onmt-optimal",
    version="0.1.0",
    description="Optimal beam search (modulo beam size) with bounded length reward for OpenNMT-py",
    long_description=(HERE / "README.md").read_text() if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    packages=["onmt_optimal", "onmt_optimal.search", "onmt_optimal.opennmt", "onmt_optimal.distributed",
              "onmt_optimal.eole"],
    python_requires=">=3.9",
    # torch and OpenNMT-py are deliberately not listed: OpenNMT-py 3.5.1 pins torch<2.3 and pip would
    # downgrade torch to satisfy it. Install them first (see README / Makefile).
    # what onmt_optimal itself imports (run time; requirements.txt adds what OpenNMT-py imports)
    install_requires=["sacrebleu>=2.0", "sacremoses", "tqdm"],
    extras_require={"test": ["pytest", "hypothesis", "matplotlib", "ray==2.60.0"], "plots": ["matplotlib"],
                    # -ray_workers / sweep --ray-workers (onmt_optimal/distributed); the version tested
                    "ray": ["ray==2.60.0"],
                    # eole, OpenNMT's successor (onmt_optimal/eole; the version tested); aiohttp: eole's `eole`
                    # command imports it without declaring it. In its own environment: eole's pins conflict with
                    # OpenNMT-py 3.5.1's requirements.txt (README, eole section)
                    "eole": ["eole==0.6.4", "aiohttp"]},
    cmdclass={"build_py": build_py_with_pth},
    entry_points={"console_scripts": ["onmt-optimal=onmt_optimal.__main__:main"]},
)
