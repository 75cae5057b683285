// Graphile Worker's steady shape, as `make bench-peers` runs it beside Jadpo's.
//
// PRODUCERS producers each add single jobs (`addJob`, one transaction per job) for SECONDS; one
// worker pool with CONCURRENCY runs a no-op task. Prints one JSON line: jobs added, the time
// until the last job finished, end-to-end jobs/s, and add-return -> task-start percentiles.
//
// Usage: node graphile.mjs <postgres-url> [seconds] [producers] [concurrency]
import { Logger, makeWorkerUtils, run } from "graphile-worker";

const [url, seconds = "10", producers = "8", concurrency = "8"] = process.argv.slice(2);
if (!url) {
  console.error("usage: node graphile.mjs <postgres-url> [seconds] [producers] [concurrency]");
  process.exit(2);
}

const now = () => Number(process.hrtime.bigint()) / 1e6; // milliseconds, monotonic
const added = new Map(); // job id -> time its addJob returned
const started = new Map(); // job id -> time its task started
let finished = 0;
let lastFinish = 0;

const quiet = new Logger(() => () => {});
const utils = await makeWorkerUtils({ connectionString: url, logger: quiet });
await utils.migrate();
await utils.withPgClient((c) => c.query("TRUNCATE graphile_worker._private_jobs CASCADE"));

const runner = await run({
  connectionString: url,
  concurrency: Number(concurrency),
  noHandleSignals: true,
  pollInterval: 1000,
  logger: quiet,
  taskList: {
    noop: async (_payload, helpers) => {
      started.set(String(helpers.job.id), now());
      finished += 1;
      lastFinish = now();
    },
  },
});

const begin = now();
const stopAt = begin + Number(seconds) * 1000;
let total = 0;
await Promise.all(
  Array.from({ length: Number(producers) }, async () => {
    while (now() < stopAt) {
      const job = await utils.addJob("noop", {});
      added.set(String(job.id), now());
      total += 1;
    }
  }),
);
const addedFor = now() - begin;
while (finished < total) {
  await new Promise((r) => setTimeout(r, 5));
}
const wall = lastFinish - begin;
await runner.stop();
await utils.release();

const latencies = [];
for (const [id, at] of added) {
  const s = started.get(id);
  if (s !== undefined) latencies.push(Math.max(0, s - at));
}
latencies.sort((a, b) => a - b);
const pick = (q) => latencies[Math.round((latencies.length - 1) * q)] ?? NaN;
console.log(
  JSON.stringify({
    peer: "graphile-worker",
    jobs: total,
    added_per_s: total / (addedFor / 1000),
    jobs_per_s: total / (wall / 1000),
    p50_ms: pick(0.5),
    p99_ms: pick(0.99),
  }),
);
