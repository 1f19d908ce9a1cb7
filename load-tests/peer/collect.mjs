// quant_vs_llama_cpp.sh's bookkeeping: turns each tool's output into tagged JSON lines (one file per
// run), and that file into the side-by-side table. Node only, since the peer needs Node anyway.
//   node collect.mjs bench   BENCH.json   k=v ...   # Google Benchmark JSON (bench_decode) -> a line per case
//   node collect.mjs loadgen LOADGEN.json k=v ...   # loadgen results -> a line per level
//   node collect.mjs tag     k=v ... < LINES        # JSON lines (llama_cpp_decode.mjs) with the tags added
//   node collect.mjs table   RUN.jsonl              # the markdown table of a run
import { readFileSync } from "node:fs";

function tags(args) {
  const t = {};
  for (const a of args) {
    const i = a.indexOf("=");
    const v = a.slice(i + 1);
    t[a.slice(0, i)] = v !== "" && !Number.isNaN(Number(v)) ? Number(v) : v;
  }
  return t;
}

function bench(path, t) {
  for (const b of JSON.parse(readFileSync(path, "utf8")).benchmarks ?? []) {
    if (b.run_type !== "iteration" || b.error_occurred) continue;
    // decode/file/<format>/streams:<n>
    const [, , format, streams] = b.name.split("/");
    console.log(JSON.stringify({
      ...t, kind: "bench_decode", format, sequences: Number(streams.split(":")[1]), decode_tok_s: b["tok/s"],
      mb_per_token: b["MB/token"], bw_gbps: b["bw_GB/s"], limit_tok_s: b["limit_tok/s"], ratio: b.ratio,
      paired_ratio: b.paired_ratio, ratio_at_top: b.ratio_at_top, top_bw_gbps: b["top_bw_GB/s"],
    }));
  }
}

function loadgen(path, t) {
  const r = JSON.parse(readFileSync(path, "utf8"));
  for (const l of r.levels) {
    console.log(JSON.stringify({
      ...t, kind: "server", sequences: l.concurrency, completed: l.completed, failed: l.failed,
      output_tok_s: l.output_throughput, median_tpot_ms: l.median_tpot_ms, median_ttft_ms: l.median_ttft_ms,
      // every stream decoding at its median pace: the server's decode rate without the prefill phase
      decode_tok_s: l.median_tpot_ms > 0 ? (l.concurrency * 1000) / l.median_tpot_ms : 0,
      host_loadavg_start: l.host_loadavg_start,
    }));
  }
}

async function tagLines(t) {
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  for (const line of input.split("\n")) {
    if (!line.trim().startsWith("{")) continue;
    console.log(JSON.stringify({ ...t, ...JSON.parse(line) }));
  }
}

const fmt = (x, d = 1) => (x === undefined || x === null || Number.isNaN(x) ? "–" : Number(x).toFixed(d));
const best = (rows, key) => (rows.length ? Math.max(...rows.map((r) => r[key] ?? 0)) : undefined);

function table(path) {
  const rows = readFileSync(path, "utf8").split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  const files = [...new Set(rows.map((r) => r.file))];
  const out = [];
  out.push("| file | MB/token | BW GB/s | limit tok/s | llama.cpp 1 | pagedserve 1 (format) | ratio 1 | of limit (llama / ours) | ours at each run's own probe | ours paired: median (at top GB/s) | llama.cpp 16 | pagedserve engine 16 | server 16 decode (out) | ratio 16 (engine / server) | RSS MiB llama / ours | file + KV MiB | prefill tok/s llama / server (ratio) |");
  out.push("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (const f of files) {
    const r = rows.filter((x) => x.file === f);
    const load = r.find((x) => x.who === "llama.cpp" && x.kind === "load");
    const decoding = r.filter((x) => x.phase !== "prefill"), prefill = r.filter((x) => x.phase === "prefill");
    const llama = (s) => decoding.filter((x) => x.who === "llama.cpp" && x.kind === "decode" && x.sequences === s);
    const engine = (s) => r.filter((x) => x.kind === "bench_decode" && x.sequences === s);
    const server = decoding.filter((x) => x.kind === "server");
    // Prompt processing: llama.cpp's prompt eval, the server's prompt over its median time to first token.
    const pLlama = best(prefill.filter((x) => x.who === "llama.cpp"), "prompt_tok_s");
    const pOurs = best(prefill.filter((x) => x.kind === "server" && x.median_ttft_ms > 0)
      .map((x) => ({ ...x, prompt_tok_s: (x.prompt_tokens * 1000) / x.median_ttft_ms })), "prompt_tok_s");
    const bw = best(r.filter((x) => x.kind === "bench_decode"), "bw_gbps");
    const bpt = load?.bytes_per_token;
    const limit = bw && bpt ? (bw * 1e9) / bpt : undefined;
    const l1 = best(llama(1), "decode_tok_s"), l16 = best(llama(16), "decode_tok_s");
    const e1rows = engine(1), e1 = best(e1rows, "decode_tok_s");
    const e1fmt = e1rows.find((x) => x.decode_tok_s === e1)?.format;
    // The probe is bimodal (~35 or ~52 GB/s): each batch-1 run against the bandwidth its own process
    // measured, lowest to highest over the rounds, beside the share of the run's best probe.
    const own = e1rows.filter((x) => x.format === e1fmt && x.ratio !== undefined).map((x) => x.ratio);
    const ownRange = own.length ? `${fmt(Math.min(...own), 2)}–${fmt(Math.max(...own), 2)}` : "–";
    // Against a probe on either side of each 25 ms window (bench_decode's paired counters): the median
    // window, and the windows at the run's best probe (the fast state when the run saw it).
    const paired = e1rows.filter((x) => x.format === e1fmt && x.paired_ratio !== undefined);
    const atTop = paired.reduce((a, x) => (a && a.top_bw_gbps >= x.top_bw_gbps ? a : x), undefined);
    const pairedText = paired.length
      ? `${fmt(Math.min(...paired.map((x) => x.paired_ratio)), 2)}–${fmt(Math.max(...paired.map((x) => x.paired_ratio)), 2)} (${fmt(atTop.ratio_at_top, 2)} at ${fmt(atTop.top_bw_gbps)})`
      : "–";
    const e16 = best(engine(16), "decode_tok_s");
    const s16 = best(server, "decode_tok_s"), s16out = best(server, "output_tok_s");
    const rssLlama = best(r.filter((x) => x.who === "llama.cpp" && x.kind === "decode"), "rss_mib");
    const rssOurs = best(r.filter((x) => x.kind === "server_rss"), "rss_mib");
    const kv = r.find((x) => x.kind === "server_rss")?.kv_pool_mib;
    const fileMiB = load ? load.file_bytes / 1048576 : undefined;
    out.push(`| ${f} | ${fmt(bpt / 1e6)} | ${fmt(bw)} | ${fmt(limit)} | ${fmt(l1)} | ${fmt(e1)} (${e1fmt ?? "–"}) | ${fmt(e1 / l1, 2)} | ${fmt(l1 / limit, 2)} / ${fmt(e1 / limit, 2)} | ${ownRange} | ${pairedText} | ${fmt(l16)} | ${fmt(e16)} | ${fmt(s16)} (${fmt(s16out)}) | ${fmt(e16 / l16, 2)} / ${fmt(s16 / l16, 2)} | ${fmt(rssLlama, 0)} / ${fmt(rssOurs, 0)} | ${fmt(fileMiB, 0)} + ${fmt(kv, 0)} | ${fmt(pLlama)} / ${fmt(pOurs)} (${fmt(pOurs / pLlama, 2)}) |`);
  }
  const idle = rows.filter((x) => x.idle !== undefined).map((x) => x.idle);
  const load1 = rows.filter((x) => x.load1 !== undefined).map((x) => x.load1);
  out.push("");
  out.push(`Each figure is the best of the run's rounds. CPU idle before the measurements: ${fmt(Math.min(...idle), 2)} to ${fmt(Math.max(...idle), 2)}; 1-min load average ${fmt(Math.min(...load1), 2)} to ${fmt(Math.max(...load1), 2)}.`);
  console.log(out.join("\n"));
}

const [cmd, arg, ...rest] = process.argv.slice(2);
if (cmd === "bench") bench(arg, tags(rest));
else if (cmd === "loadgen") loadgen(arg, tags(rest));
else if (cmd === "tag") await tagLines(tags([arg, ...rest].filter(Boolean)));
else if (cmd === "table") table(arg);
else {
  console.error("usage: collect.mjs bench|loadgen FILE k=v... | tag k=v... < LINES | table RUN.jsonl");
  process.exit(2);
}
