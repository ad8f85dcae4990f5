#!/usr/bin/env bash
# Keep the working tree small enough for the accelerator machine. The device tool sends the checkout's tracked
# and untracked-not-ignored files and refuses more than 64 MiB; the three shipped models are 87 MB together,
# and one GPU run needs one model. Run here, in the repo root, around a device run:
#
#   bash scripts/device_tree.sh only tvsub-zh-en   # every other models/* folder moves to .aside/ (ignored)
#   bash scripts/device_tree.sh size               # MiB that would travel (without carried paths such as .gpu)
#   bash scripts/device_tree.sh restore            # put them back (a session cut off: `git checkout -- models`
#                                                  # restores them from git just as well)
#
# e.g. `bash scripts/device_tree.sh only tvsub-zh-en && bash ../shared/gpu/prepare` (this first: it makes the
# .git/info/ that prepare appends to, which a fresh checkout may lack), then a device run with
# carry [".gpu"] and `bash .gpu/on-device.sh python3 scripts/bench.py --config tvsub --gpu 0 ...`, then
# `bash scripts/device_tree.sh restore`. Nothing here is committed: .aside/ goes to .git/info/exclude.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.aside/' "$exclude" 2>/dev/null || echo '/.aside/' >> "$exclude"

size() {
  git ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done \
    | xargs -0 du -cb | tail -1 | awk '{printf "%.1f MiB would travel (limit 64 MiB, carried paths such as .gpu not included)\n", $1 / 1048576}'
}

case "${1:-}" in
  only)
    shift
    [ $# -gt 0 ] || { echo "usage: $0 only MODEL [MODEL...] (folders of models/)" >&2; exit 2; }
    for keep in "$@"; do [ -d "models/$keep" ] || [ -d ".aside/$keep" ] || { echo "$0: no model $keep" >&2; exit 2; }; done
    mkdir -p .aside
    for keep in "$@"; do [ -d ".aside/$keep" ] && mv ".aside/$keep" models/; done
    for dir in models/*/; do
      name=$(basename "$dir")
      [[ " $* " == *" $name "* ]] || mv "models/$name" .aside/
    done
    size ;;
  restore)
    if [ -d .aside ]; then
      for dir in .aside/*/; do [ -d "$dir" ] && mv "$dir" models/; done
      rmdir .aside 2>/dev/null || true
    fi
    git status --short models | grep . && echo "$0: models/ differs from git (git checkout -- models restores it)" >&2 || true
    size ;;
  size) size ;;
  *) echo "usage: $0 only MODEL... | restore | size" >&2; exit 2 ;;
esac
