# Sourced: sets `index_args` for pip. PyPI is out of reach on these machines and pip's retries of it
# cost minutes, so when pip is configured with other indexes (extra-index-url) those are used directly.
index_args=()
read -r -a extra <<<"$(pip config get global.extra-index-url 2>/dev/null | tr '\n' ' ')"
if [ ${#extra[@]} -gt 0 ]; then
  index_args+=(--index-url "${extra[0]}")
  for url in "${extra[@]:1}"; do index_args+=(--extra-index-url "$url"); done
fi
