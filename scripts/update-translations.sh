#!/usr/bin/env bash
# Refreshes the UI translation catalogue and compiles it.
#   1. pyside6-lupdate collects every tr()/translate()/QT_TRANSLATE_NOOP string from
#      strata_gui/ui/**.py and strata_gui/app.py into resources/translations/strata_zh_CN.ts
#      (new strings arrive as type="unfinished"; strings gone from the code are dropped).
#   2. Translate the unfinished entries (Qt Linguist: pyside6-linguist, or any editor).
#   3. pyside6-lrelease compiles the .ts into the .qm the app loads.
# Run it after changing UI strings; tests/i18n fails while the catalogue is stale or unfinished.
# English is the source language; its catalogue holds only the plural forms (scripts/english-plurals.py).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin="$root/.venv/bin"
lupdate="${PYSIDE6_LUPDATE:-$([ -x "$bin/pyside6-lupdate" ] && echo "$bin/pyside6-lupdate" || echo pyside6-lupdate)}"
lrelease="${PYSIDE6_LRELEASE:-$([ -x "$bin/pyside6-lrelease" ] && echo "$bin/pyside6-lrelease" || echo pyside6-lrelease)}"
out="resources/translations"
mkdir -p "$out"

# The UI, and the core files whose sentences are marked for translation (core/base/texts.py).
mapfile -t sources < <(find strata_gui/ui -name '*.py' | LC_ALL=C sort; echo strata_gui/app.py;
                       grep -rl --include='*.py' 'QT_TRANSLATE_NOOP(' strata_gui/core | grep -v '/texts.py$' | LC_ALL=C sort)
for lang in zh_CN; do
    "$lupdate" "${sources[@]}" -ts "$out/strata_$lang.ts" -target-language "$lang" -no-obsolete -locations none
    "$lrelease" "$out/strata_$lang.ts" -qm "$out/strata_$lang.qm"
done
# English needs only its plurals ("%n model(s)" → "1 model", "3 models"), written by a script.
"$lupdate" "${sources[@]}" -ts "$out/strata_en.ts" -target-language en -no-obsolete -locations none -pluralonly
"$bin/python" scripts/english-plurals.py "$out/strata_en.ts"
"$lrelease" "$out/strata_en.ts" -qm "$out/strata_en.qm"
