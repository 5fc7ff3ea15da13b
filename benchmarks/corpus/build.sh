#!/usr/bin/env bash
# Issue 23's corpus, step 2 (CPU, no GPU): each recorded workload compiled into a bench bundle and explained.
#   bash benchmarks/corpus/build.sh bundles [NAME...]   -> .bundles/corpus/NAME (3.6.0 = the recording host's
#                                                          Triton, the reference; 3.3.1; 3.4.0) + .carry/corpus-bundles.tgz
#                                                          (BUNDLES=DIR TGZ=FILE: another folder and tarball, e.g.
#                                                          a device call's new bundles alone)
#   bash benchmarks/corpus/build.sh explain [NAME...]   -> benchmarks/corpus/h200/explain/NAME.{json.gz,md,log.gz}
#                                                          (3.6.0 reference vs 3.3.1, 3.4.0, 3.5.1, 3.9.0, sm_90;
#                                                          EXPLAIN_OUT=DIR: another folder)
# NAME: a workload of benchmarks/corpus/h200/workloads/ without .workload.json.gz (default: all with a kernel); the
# workloads are committed gzipped, ktriage reads them as they are (a plain NAME.workload.json is taken too).
# One workload's failure never stops the others; each one's exit status goes to build.log next to its output.
set -uo pipefail
cd "$(dirname "$0")/../.."
WL=${WL:-benchmarks/corpus/h200/workloads}
KT=${KT:-.venv/bin/ktriage}
BUNDLES=${BUNDLES:-.bundles/corpus} TGZ=${TGZ:-.carry/corpus-bundles.tgz}
step=${1:?usage: build.sh bundles|explain [NAME...]}; shift
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$WL"/*.workload.json.gz; do names+=("$(basename "$f" .workload.json.gz)"); done
fi
wl() { if [ -f "$WL/$1.workload.json.gz" ]; then echo "$WL/$1.workload.json.gz"; else echo "$WL/$1.workload.json"; fi; }
has_kernels() { python3 -c "import gzip,json,sys; sys.exit(0 if json.loads(gzip.open(sys.argv[1]).read() if sys.argv[1].endswith('.gz') else open(sys.argv[1]).read()).get('kernels') else 1)" "$1"; }
case "$step" in
  bundles)
    mkdir -p "$BUNDLES"
    for n in "${names[@]}"; do
      has_kernels "$(wl "$n")" || { echo "$n: no kernel recorded, no bundle" >> "$BUNDLES/build.log"; continue; }
      [ -f "$BUNDLES/$n/manifest.json" ] && continue
      t0=$(date +%s)
      $KT bench "$(wl "$n")" -t triton==3.6.0 -t triton==3.3.1 -t triton==3.4.0 --compile-only \
        --bundle "$BUNDLES/$n" > "$BUNDLES/$n.log" 2>&1
      echo "$n: exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$BUNDLES/build.log"
    done
    if [ "$BUNDLES" = .bundles/corpus ]; then
      mkdir -p .carry && tar czf "$TGZ" -C .bundles corpus $(cd .bundles && ls -d corpus39 2>/dev/null)
    else
      mkdir -p "$(dirname "$TGZ")" && tar czf "$TGZ" -C "$(dirname "$BUNDLES")" "$(basename "$BUNDLES")"
    fi
    du -sh "$BUNDLES" "$TGZ" ;;
  explain)
    out=${EXPLAIN_OUT:-benchmarks/corpus/h200/explain}
    mkdir -p "$out"
    for n in "${names[@]}"; do
      has_kernels "$(wl "$n")" || continue
      [ -f "$out/$n.json.gz" ] && continue
      t0=$(date +%s)
      $KT explain "$(wl "$n")" -t triton==3.6.0 -t triton==3.3.1 -t triton==3.4.0 -t triton==3.5.1 \
        -t triton==3.9.0 --arch sm_90 --allow-failures -o "$out/$n.json" -o "$out/$n.md" > "$out/$n.log" 2>&1
      rc=$?
      [ -f "$out/$n.json" ] && gzip -9 -f "$out/$n.json"  # committed gzipped (12x smaller)
      gzip -9 -n -f "$out/$n.log"  # its stderr, likewise (NAME.log.gz: zcat to read)
      echo "$n: exit $rc after $(( $(date +%s) - t0 )) s" | tee -a "$out/build.log"
    done ;;
  *) echo "error: unknown step '$step' (bundles or explain)" >&2; exit 2 ;;
esac
