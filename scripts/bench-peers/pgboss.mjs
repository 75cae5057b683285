// pg-boss in the shapes `make bench-peers` runs Graphile Worker and Jadpo in.
//
// A pg-boss worker slot fetches up to `batchSize` jobs and, having run them, waits its polling
// interval (at least 0.5 s) before it fetches again: its throughput is at most `localConcurrency`
// x `batchSize` per interval. With the defaults (one job per fetch) 8 slots run 16 jobs/s, so it
// runs here with 8 slots fetching up to 64 jobs each in the steady shape, 500 in the drain, at
// the shortest interval, and the queue created with `notify: true` (LISTEN/NOTIFY, pg-boss's
// low-latency setting).
//
// steady: PRODUCERS producers each send single jobs (`send`, one statement each) for SECONDS
//   while the worker runs a no-op handler. Jobs/s from the first send to the last finish;
//   send-return -> handler-start percentiles.
// drain: JOBS jobs inserted in batches of 1,000 (`insert`) with no worker running, then
//   drained; jobs/s of the drain alone.
//
// Prints one JSON line.
//
// Usage: node pgboss.mjs <postgres-url> steady <seconds> [producers]
//        node pgboss.mjs <postgres-url> drain <jobs>
import { PgBoss } from "pg-boss";

const [url, shape, amount = "10", producers = "8"] = process.argv.slice(2);
if (!url || !["steady", "drain"].includes(shape)) {
  console.error("usage: node pgboss.mjs <postgres-url> (steady <seconds> [producers]|drain <jobs>)");
  process.exit(2);
}

const now = () => Number(process.hrtime.bigint()) / 1e6; // milliseconds, monotonic
const QUEUE = "noop";
const boss = new PgBoss({ connectionString: url, schedule: false, max: 20 });
boss.on("error", (e) => console.error(e));
await boss.start();
await boss.createQueue(QUEUE, { notify: true });

const pick = (sorted, q) => sorted[Math.round((sorted.length - 1) * q)] ?? NaN;

async function steady() {
  const seconds = Number(amount);
  const sent = new Map(); // job id -> time its send returned
  const started = new Map(); // job id -> time its handler started
  let finished = 0;
  let lastFinish = 0;
  const options = { localConcurrency: 8, batchSize: 64, pollingIntervalSeconds: 0.5 };
  await boss.work(QUEUE, options, async (batch) => {
    for (const job of batch) started.set(job.id, now());
    finished += batch.length;
    lastFinish = now();
  });
  const begin = now();
  const stopAt = begin + seconds * 1000;
  let total = 0;
  await Promise.all(
    Array.from({ length: Number(producers) }, async () => {
      while (now() < stopAt) {
        const id = await boss.send(QUEUE, {});
        sent.set(id, now());
        total += 1;
      }
    }),
  );
  while (finished < total) {
    await new Promise((r) => setTimeout(r, 5));
  }
  const latencies = [];
  for (const [id, at] of sent) {
    const s = started.get(id);
    if (s !== undefined) latencies.push(Math.max(0, s - at));
  }
  latencies.sort((a, b) => a - b);
  return {
    peer: "pg-boss",
    shape: "steady",
    jobs: total,
    jobs_per_s: total / ((lastFinish - begin) / 1000),
    p50_ms: pick(latencies, 0.5),
    p99_ms: pick(latencies, 0.99),
  };
}

async function drain() {
  const jobs = Number(amount);
  for (let added = 0; added < jobs; added += 1000) {
    const n = Math.min(1000, jobs - added);
    await boss.insert(QUEUE, Array.from({ length: n }, () => ({ data: {} })));
  }
  let finished = 0;
  let lastFinish = 0;
  const begin = now();
  const options = { localConcurrency: 8, batchSize: 500, pollingIntervalSeconds: 0.5 };
  await boss.work(QUEUE, options, async (batch) => {
    finished += batch.length;
    lastFinish = now();
  });
  while (finished < jobs) {
    await new Promise((r) => setTimeout(r, 5));
  }
  return { peer: "pg-boss", shape: "drain", jobs, jobs_per_s: jobs / ((lastFinish - begin) / 1000) };
}

const result = shape === "steady" ? await steady() : await drain();
await boss.stop({ graceful: false, wait: true });
console.log(JSON.stringify(result));
