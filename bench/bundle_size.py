"""Where the bundle's bytes go: groups of dist/Strata by origin, as shares of the whole.

Run after scripts/build-bundle.sh:  .venv/bin/python bench/bundle_size.py [dist/Strata]
Prints MB and the share of the bundle per group, biggest first, so a change to build.spec's
excludes shows up as a ratio against the same run's total.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

GROUPS = [
    ("Qt: ICU (needed by QtCore on Linux)", r"(^|/)(lib)?icu\w*\.(so|dll)"),
    ("Qt: platform/image/etc. plugins", r"PySide6/(Qt/)?plugins/"),
    ("Qt: libraries", r"PySide6/(Qt/lib/)?(lib)?Qt6\w+\.(so|dll)"),
    ("PySide6 bindings + shiboken", r"(PySide6|shiboken6)/"),
    ("numpy (gguf)", r"^numpy"),
    ("hf_xet (huggingface_hub)", r"^hf_xet"),
    ("Python runtime", r"(^|/)(libpython|python3|base_library|python\d+\.dll|lib-dynload)"),
    ("kernels/ + resources/", r"^(kernels|resources)/"),
    ("executables", r"^\.\./"),
]


def main() -> int:
    bundle = Path(sys.argv[1] if len(sys.argv) > 1 else "dist/Strata")
    internal = bundle / "_internal"
    if not internal.is_dir():
        print(f"no bundle at {bundle}: run scripts/build-bundle.sh first", file=sys.stderr)
        return 1
    sizes: Counter[str] = Counter()
    seen: set[Path] = set()
    for f in sorted(bundle.rglob("*")):
        if not f.is_file() or f.is_symlink():
            continue
        real = f.resolve()
        if real in seen:
            continue
        seen.add(real)
        rel = Path("..") / f.relative_to(bundle) if f.parent == bundle else f.relative_to(internal)
        rel_text = rel.as_posix()
        group = next((name for name, pattern in GROUPS if re.search(pattern, rel_text)), None)
        if group is None:
            group = "other packages" if "/" in rel_text else "system shared libraries"
        sizes[group] += f.stat().st_size
    total = sum(sizes.values())
    print(f"{bundle}: {total / 2**20:.1f} MB in files")
    for group, size in sizes.most_common():
        print(f"  {size / 2**20:7.1f} MB  {size / total:6.1%}  {group}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
