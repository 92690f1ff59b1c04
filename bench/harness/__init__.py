"""The benchmark harness behind `bench/run`.

main      orchestration and options
testbed   what every run shares: build, database, servers, CPU under load
compare   the current binary against an older one, taking turns
scale     each request's latency on catalogs of several sizes (--scale)
scale_set the scale mode's query set, its parameters and checks
scale_report its tables, targets and README block
machine   the machine's description and CPU pinning
proc      child processes, CPU time and memory from /proc
pg        PostgreSQL administration through psql
vitrina   building, seeding and serving Vitrina
peer      installing and serving PostGraphile
service   what both servers share: readiness, pid, stopping
http      a small JSON client
cases     the fixed query set, its parameters and its checks
capture   the SQL a request sends, read from the PostgreSQL log
floor     pgbench over that SQL, and EXPLAIN ANALYZE of it
load      wrk runs
merge     merge pass throughput
webhooks  webhook deliveries per second to a local receiver
report    tables, targets and bench/README.md
"""
