"""Golden cases of `mcpgen diff`: tests/golden_diff/<case>/{a.json, b.json, expected.txt, expected.md, expected.json}.

Each case holds two small schemas, vendored as versions `a` and `b` of one spec directory, and the
diff from a to b in the three formats. tests/test_ir_diff.py checks that a fresh diff equals the
expected files byte for byte; after an intended change, rewrite them with

    python tests/golden_diff_support.py --update      (nox -s update_golden runs it too)

and review the diff like any other change.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DIFF_DIR = Path(__file__).resolve().parent / "golden_diff"
VERSIONS = ("a", "b")  # each case's a.json and b.json, as versions of one spec directory
EXPECTED = {"text": "expected.txt", "markdown": "expected.md", "json": "expected.json"}
UPDATE_COMMAND = "python tests/golden_diff_support.py --update   (or: nox -s update_golden)"


def case_dirs() -> list[Path]:
    return sorted(path.parent for path in GOLDEN_DIFF_DIR.glob("*/a.json"))


def build_spec_dir(case_dir: Path, tmp: Path) -> Path:
    """A spec directory under `tmp` vendoring the case's a.json and b.json as versions `a` and `b`."""
    spec = tmp / "spec"
    files = {}
    for version in VERSIONS:
        data = (case_dir / f"{version}.json").read_bytes()
        (spec / version).mkdir(parents=True, exist_ok=True)
        (spec / version / "schema.json").write_bytes(data)
        files[f"{version}/schema.json"] = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "repository": "mcpgen/tests-golden-diff",
            "commit": "0" * 40,
            "upstream_path": f"tests/golden_diff/{case_dir.name}/{version}.json",
        }
    (spec / "manifest.json").write_text(json.dumps({"files": files}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return spec


def diff_case(case_dir: Path) -> dict[str, str]:
    """{expected file name: text} as mcpgen renders the case's diff now."""
    from mcpgen.pipeline.build import build_version_ir
    from mcpgen.pipeline.ir_diff import RENDERERS, diff_irs

    with tempfile.TemporaryDirectory(prefix="mcpgen-golden-diff-") as tmp:
        spec = build_spec_dir(case_dir, Path(tmp))
        diff = diff_irs(*(build_version_ir(spec, version) for version in VERSIONS))
    return {name: RENDERERS[output_format](diff) for output_format, name in EXPECTED.items()}


def read_expected(case_dir: Path) -> dict[str, str]:
    return {
        name: (case_dir / name).read_text(encoding="utf-8") for name in EXPECTED.values() if (case_dir / name).is_file()
    }


def update_all() -> list[str]:
    """Rewrite every case's expected files; returns the names of the cases that changed."""
    changed = []
    for case_dir in case_dirs():
        files = diff_case(case_dir)
        if read_expected(case_dir) != files:
            changed.append(case_dir.name)
        for name, text in files.items():
            (case_dir / name).write_bytes(text.encode("utf-8"))
    return changed


def main(argv: list[str]) -> int:
    if argv != ["--update"]:
        print(f"usage: python {Path(__file__).relative_to(ROOT)} --update", file=sys.stderr)
        return 2
    changed = update_all()
    print(f"{len(case_dirs())} diff golden case(s) regenerated; changed: {', '.join(changed) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "generator"))  # harmless when mcpgen is installed (editable)
    sys.exit(main(sys.argv[1:]))
