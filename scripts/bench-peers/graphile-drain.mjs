// Graphile Worker's drain and idle shapes, as `make bench-peers` runs them beside Jadpo's.
//
// drain: JOBS no-op jobs added in batches of 1,000 (`addJobs`) with no worker running, then one
// worker pool with CONCURRENCY drains them; jobs/s of the drain alone. SETTINGS `default` runs
// the worker as it comes; `tuned` with the settings of Graphile's performance page (a local
// queue of 500 jobs, batched completion and failure: `localQueue.size`,
// `completeJobBatchDelay: 0`, `failJobBatchDelay: 0`).
//
// idle: one producer adds a job every 20 ms, each started before the next is added; add-return
// -> task-start percentiles (the latency of an idle queue).
//
// Prints one JSON line.
//
// Usage: node graphile-drain.mjs <postgres-url> drain <jobs> <default|tuned> [concurrency]
//        node graphile-drain.mjs <postgres-url> idle <count>
import { Logger, makeWorkerUtils, run } from "graphile-worker";

const [url, shape, amount = "20000", settings = "default", concurrency = "8"] =
  process.argv.slice(2);
const usage =
  "usage: node graphile-drain.mjs <postgres-url> (drain <jobs> <default|tuned> [concurrency]|idle <count>)";
if (!url || !["drain", "idle"].includes(shape) || !["default", "tuned"].includes(settings)) {
  console.error(usage);
  process.exit(2);
}

const now = () => Number(process.hrtime.bigint()) / 1e6; // milliseconds, monotonic
const quiet = new Logger(() => () => {});
const utils = await makeWorkerUtils({ connectionString: url, logger: quiet });
await utils.migrate();
await utils.withPgClient((c) => c.query("TRUNCATE graphile_worker._private_jobs CASCADE"));

/** A worker pool running `noop` with `onStart` called as each job starts. */
async function pool(onStart, tuned) {
  const worker = tuned
    ? { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 }
    : {};
  return run({
    connectionString: url,
    concurrency: Number(concurrency),
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quiet,
    preset: { worker },
    taskList: {
      noop: async (_payload, helpers) => {
        onStart(String(helpers.job.id));
      },
    },
  });
}

async function drain() {
  const jobs = Number(amount);
  for (let added = 0; added < jobs; added += 1000) {
    const n = Math.min(1000, jobs - added);
    await utils.addJobs(Array.from({ length: n }, () => ({ identifier: "noop", payload: {} })));
  }
  let finished = 0;
  let lastFinish = 0;
  const begin = now();
  const runner = await pool(() => {
    finished += 1;
    lastFinish = now();
  }, settings === "tuned");
  while (finished < jobs) {
    await new Promise((r) => setTimeout(r, 5));
  }
  await runner.stop();
  return { peer: "graphile-worker", shape: "drain", settings, jobs, jobs_per_s: jobs / ((lastFinish - begin) / 1000) };
}

async function idle() {
  const count = Number(amount);
  let waiting = null;
  const runner = await pool((id) => waiting?.(id, now()), false);
  const latencies = [];
  for (let i = 0; i < count + 20; i++) {
    const startedAt = new Promise((resolve) => {
      waiting = (_id, at) => resolve(at);
    });
    const job = await utils.addJob("noop", {});
    const addedAt = now();
    const at = await startedAt;
    if (i >= 20) latencies.push(Math.max(0, at - addedAt)); // the first 20 warm the pool
    void job;
    await new Promise((r) => setTimeout(r, 20));
  }
  await runner.stop();
  latencies.sort((a, b) => a - b);
  const pick = (q) => latencies[Math.round((latencies.length - 1) * q)] ?? NaN;
  return { peer: "graphile-worker", shape: "idle", jobs: count, p50_ms: pick(0.5), p99_ms: pick(0.99) };
}

const result = shape === "drain" ? await drain() : await idle();
await utils.release();
console.log(JSON.stringify(result));
