#!/bin/sh
# The suite's Maven builds, kept outside the checkout: `build_cache.sh restore|keep <folder> <label> <inputs...>`.
# The key is the label and the contents of the inputs (the Makefile among them, so a changed recipe builds anew).
# `restore` copies a kept folder into place and succeeds, or fails when none is kept; `keep` copies a folder just
# built into the cache (a fresh clone, as CI's, then copies instead of running Maven: ~2 min of a clean make test,
# one Maven after another). BUILD_CACHE names the cache (default ~/.cache/pocketmq/builds).
set -eu
action=$1 folder=$2 label=$3
shift 3
key=$(cat "$@" | sha256sum | cut -c1-16)
kept=${BUILD_CACHE:-$HOME/.cache/pocketmq/builds}/$label-$key
case $action in
  restore)
    [ -d "$kept" ] || exit 1
    rm -rf "$folder"
    mkdir -p "$(dirname "$folder")"
    cp -a "$kept" "$folder"
    ;;
  keep)
    mkdir -p "$(dirname "$kept")"
    # Two clones building at once: the copy goes in under a name of its own, then one rename wins.
    rm -rf "$kept.tmp$$"
    cp -a "$folder" "$kept.tmp$$"
    mv -T "$kept.tmp$$" "$kept" 2>/dev/null || rm -rf "$kept.tmp$$"
    # Only the newest build of a label stays (a few hundred MB each).
    for older in "${kept%-*}"-*; do
      case $older in "$kept"|*.tmp*) ;; *) rm -rf "$older" ;; esac
    done
    ;;
  *)
    echo "build_cache.sh: restore or keep, not $action" >&2
    exit 2
    ;;
esac
