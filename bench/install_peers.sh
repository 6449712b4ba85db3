#!/usr/bin/env bash
# install_peers.sh — installs the peers bench_peers measures uopjit against,
# from Debian packages: OpenBLAS (libopenblas-dev, linked into
# build/bench_peers), NumPy (python3-numpy) and PyTorch CPU (python3-torch)
# for /usr/bin/python3.
#
# In: nothing. Out: the missing packages installed with apt-get (through
# sudo when not root); `apt-get update` runs once, only when a package has
# no candidate or the first install attempt fails. Exit status 0 when all
# are present afterwards, else 1 with the reason on stderr (bench/run.sh
# then runs without the absent peers: their columns say "absent").
set -uo pipefail

packages=(libopenblas-dev python3-numpy python3-torch)

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_peers: all present (${packages[*]})"
  exit 0
fi

sudo=()
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "install_peers: not root and no sudo; missing: ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi

updated=0
apt_update() {
  echo "install_peers: apt-get update"
  "${sudo[@]}" apt-get update -qq >/dev/null && updated=1
}

# A package without an install candidate means the lists are stale or absent.
for p in "${missing[@]}"; do
  policy=$(apt-cache policy "$p" 2>/dev/null)
  if ! grep -q 'Candidate: [^(]' <<<"$policy"; then
    apt_update || { echo "install_peers: apt-get update failed" >&2; exit 1; }
    break
  fi
done

install() {
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
echo "install_peers: installing ${missing[*]}"
if ! install; then
  if [ "$updated" = 1 ] || ! apt_update || ! install; then
    echo "install_peers: apt-get install ${missing[*]} failed" >&2
    exit 1
  fi
fi
echo "install_peers: installed ${missing[*]}"
