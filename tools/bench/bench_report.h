/* bench_report.h — what `ember bench` prints (bench_report.c): throughput, TTFT, TPOT and
 * ITL percentiles and goodput under the SLOs, as text or one JSON object, for the
 * in-process engine (with its KV cache, batching and speculation counts) and for a server
 * driven with --url. */
#ifndef EMBER_TOOLS_BENCH_REPORT_H
#define EMBER_TOOLS_BENCH_REPORT_H

#include "bench_http.h"
#include "bench_workload.h"

/* The report of a finished in-process run of w on engine e; false when memory runs out. */
bool bench_report(const bench_args *a, workload *w, ember_engine *e, double duration_s);
/* The report of a run against the server a->url (model o->model); says on stderr how many
 * requests failed. False when none completed or memory runs out. */
bool bench_report_url(const bench_args *a, const bench_http_opts *o, const bench_http_req *r, uint32_t n,
                      double duration_s);

#endif
