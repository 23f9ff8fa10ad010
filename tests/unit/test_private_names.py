"""No module of inferctl imports another module's underscore name (docs/architecture.md, "Layers").

import-linter checks modules, not names, and ruff's import-private-name rule skips imports inside one
package; so this one rule is checked here, from the syntax tree of every source file.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "inferctl"


def private_uses(path: Path, src: Path = SRC) -> list[str]:
    """``from inferctl.x import _y`` and ``x._y`` on an imported inferctl module, in one file under ``src``."""
    me = ".".join(path.relative_to(src.parent).with_suffix("").parts).removesuffix(".__init__")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("inferctl") and node.module != me:
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"from {node.module} import {alias.name}")
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update(a.asname for a in node.names if a.name.startswith("inferctl") and a.asname)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{node.value.id}.{node.attr}")
    return [f"{me}: {use}" for use in found]


def test_no_module_imports_another_modules_private_name():
    uses = [use for path in sorted(SRC.rglob("*.py")) for use in private_uses(path)]
    assert uses == [], "make the name public where it belongs, or keep it in one module:\n" + "\n".join(uses)


def test_the_check_sees_both_spellings(tmp_path):
    pkg = tmp_path / "inferctl" / "cloud"
    pkg.mkdir(parents=True)
    (pkg / "deploy.py").write_text("from inferctl.cloud import gce\nfrom inferctl.server.stream import _msg\n"
                                   "gce._wait_op()\ngce.wait_op()\n", encoding="utf-8")
    assert private_uses(pkg / "deploy.py", tmp_path / "inferctl") == [
        "inferctl.cloud.deploy: from inferctl.server.stream import _msg", "inferctl.cloud.deploy: gce._wait_op"]
