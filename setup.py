"""Packaging hook: the wheel ships the bundled example models' artifacts.

Everything else is in pyproject.toml. ``models/`` is the default repository of a checkout and
holds the scripts that build it; a wheel has no checkout, so the artifacts (each model's
``config.json`` and version directories -- never the scripts) are copied into the package as
``service/bundled_models/``, which the server serves when no repository is given.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def bundled_model_files() -> list[tuple[Path, Path]]:
    """(source, path inside bundled_models/) for every artifact of every bundled model."""
    out = []
    for model in sorted((ROOT / "models").iterdir()):
        if not model.is_dir():
            continue
        versions = [d for d in model.iterdir() if d.is_dir() and d.name.isdigit()]
        if not versions:
            continue  # not a model (data, caches)
        if (model / "config.json").is_file():
            out.append((model / "config.json", Path(model.name, "config.json")))
        for version in versions:
            for f in sorted(version.rglob("*")):
                if f.is_file():
                    out.append((f, f.relative_to(model.parent)))
    return out


class BuildWithModels(build_py):
    def run(self):
        super().run()
        if not (ROOT / "models").is_dir():
            return  # building from an sdist without models: nothing to bundle
        target = Path(self.build_lib) / "service" / "bundled_models"
        shutil.rmtree(target, ignore_errors=True)
        for source, relative in bundled_model_files():
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / relative)


setup(cmdclass={"build_py": BuildWithModels})
