// llama.cpp's decode speed and memory on one GGUF file, through node-llama-cpp's prebuilt CPU build
// (libllama + ggml's CPU backends, no GPU probing), so quant_vs_llama_cpp.sh can time it beside
// pagedserve on the same file in the same run. Prints one JSON line per measurement on stdout:
//   {"kind":"load", ...}      load seconds, VmRSS before and after loading, llama.cpp's release and CPU features
//   {"kind":"decode", "sequences":1, ...}  greedy decode after a short prompt: prompt tok/s and decode tok/s
//   {"kind":"decode", "sequences":S, ...}  S sequences decoding at once in one context: aggregate tok/s
// Decode time starts once every sequence has its first token (load and prompt excluded); tokens are
// counted until the first sequence finishes, so all S are decoding for the whole window.
//
//   node llama_cpp_decode.mjs --model M.gguf [--threads 2] [--prompt-tokens 32] [--gen-tokens 128]
//        [--sequences 1,16] [--flash-attn on|off] [--repeats 1]
// Installed by `npm ci` in load-tests/peer (quant_vs_llama_cpp.sh does it), never at server start.
import { readFileSync, statSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { getLlama, GgmlType, LlamaLogLevel } from "node-llama-cpp";

function parseArgs(argv) {
  const o = { model: "", threads: 2, promptTokens: 32, genTokens: 128, sequences: [1, 16], flashAttn: true, repeats: 1, batchWaitMs: 0 };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`${k} needs a value`);
    if (k === "--model") o.model = v;
    else if (k === "--threads") o.threads = Number(v);
    else if (k === "--prompt-tokens") o.promptTokens = Number(v);
    else if (k === "--gen-tokens") o.genTokens = Number(v);
    else if (k === "--sequences") o.sequences = v.split(",").map(Number);
    else if (k === "--flash-attn") o.flashAttn = v === "on";
    else if (k === "--repeats") o.repeats = Number(v);
    else if (k === "--batch-wait-ms") o.batchWaitMs = Number(v);
    else throw new Error(`unknown option ${k}`);
  }
  if (!o.model) throw new Error("usage: node llama_cpp_decode.mjs --model M.gguf [--threads 2] [--prompt-tokens 32] [--gen-tokens 128] [--sequences 1,16] [--flash-attn on|off] [--repeats 1] [--batch-wait-ms 0]");
  return o;
}

// MiB of a /proc/self/status field (VmRSS, VmHWM, RssAnon, RssFile).
function statusMiB(field) {
  const m = readFileSync("/proc/self/status", "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  return m ? Number(m[1]) / 1024 : -1;
}

function rss() {
  return { rss_mib: statusMiB("VmRSS"), rss_anon_mib: statusMiB("RssAnon"), rss_file_mib: statusMiB("RssFile"), hwm_mib: statusMiB("VmHWM") };
}

// BOS, then ids spread over the vocabulary past the special tokens (as bench_decoder.hpp picks them).
function prompt(n, seq, vocab) {
  const t = [1];
  for (let p = 1; p < n; ++p) t.push(3 + ((p * 7919 + seq * 104729) % (vocab - 3)));
  return t;
}

// Bytes of weights one token reads (perf.md's "bytes/token"): every tensor but token_embd, whose one
// row is all a lookup reads, unless there is no output.weight and it is the classifier too. Tensor
// sizes come from the gaps between data offsets, so any ggml type counts right (padding included).
function weightBytes(model, fileBytes) {
  const tensors = [...model.fileInfo.tensorInfo].sort((a, b) => Number(a.fileOffset) - Number(b.fileOffset));
  const types = {};
  let perToken = 0;
  const tied = !tensors.some((t) => t.name === "output.weight");
  tensors.forEach((t, i) => {
    const end = i + 1 < tensors.length ? Number(tensors[i + 1].fileOffset) : fileBytes;
    const bytes = end - Number(t.fileOffset);
    if (t.name !== "token_embd.weight" || tied) perToken += bytes;
    if (t.dimensions.length >= 2) types[GgmlType[t.ggmlType]] = (types[GgmlType[t.ggmlType]] ?? 0) + 1;
  });
  return { bytes_per_token: perToken, matrix_ggml_types: types, tied_classifier: tied };
}

// node-llama-cpp's default schedule dispatches a batch on the next event-loop cycle after the first
// sequence queues its token, so a sequence whose sampling finishes later could miss it. This one
// (--batch-wait-ms N) waits up to N ms until every sequence still decoding has queued, as
// llama-batched-bench's single batch does; on 2026-11-25 it measured the same as the default
// (tinyllama Q4_0, 16 sequences: 28 vs 30 tok/s), so it is off by default. It reads the context's
// queue size, an internal of node-llama-cpp 3.22 (the version the lockfile pins).
function allQueuedSchedule(getContext, active, waitMs) {
  return (dispatch) => {
    const start = performance.now();
    const check = () => {
      const queued = getContext()?._queuedDecodeSequenceIds?.size ?? 0;
      if (queued >= active() || performance.now() - start >= waitMs) dispatch();
      else setTimeout(check, 0);
    };
    check();
  };
}

// Greedy decode of `sequences` sequences at once; returns the measurement.
async function decode(model, o, sequences, vocab) {
  let context = null, decoding = sequences;
  context = await model.createContext({
    sequences,
    contextSize: o.promptTokens + o.genTokens + 16,
    threads: o.threads,
    flashAttention: o.flashAttn,
    ...(o.batchWaitMs > 0 && sequences > 1
      ? { batching: { dispatchSchedule: allQueuedSchedule(() => context, () => decoding, o.batchWaitMs) } } : {}),
  });
  const seqs = Array.from({ length: sequences }, () => context.getSequence());
  // Warm-up: a few tokens on every sequence (pages the mapped weights in, sizes the buffers).
  await Promise.all(seqs.map(async (s, i) => {
    let n = 0;
    for await (const _ of s.evaluate(prompt(8, 1000 + i, vocab), { temperature: 0, yieldEogToken: true })) if (++n >= 4) break;
    await s.clearHistory();
  }));
  decoding = sequences;
  const results = [];
  for (let r = 0; r < o.repeats; ++r) {
    const start = performance.now();
    const times = seqs.map(() => []);  // every token's arrival, per sequence
    await Promise.all(seqs.map(async (s, i) => {
      for await (const _ of s.evaluate(prompt(o.promptTokens, i, vocab), { temperature: 0, yieldEogToken: true })) {
        times[i].push(performance.now());
        if (times[i].length >= o.genTokens) break;
      }
      --decoding;
    }));
    decoding = sequences;
    const allFirst = Math.max(...times.map((t) => t[0]));
    const firstDone = Math.min(...times.map((t) => t[t.length - 1]));
    const inWindow = times.reduce((n, t) => n + t.filter((x) => x > allFirst && x <= firstDone).length, 0);
    const decodeS = (firstDone - allFirst) / 1000;
    results.push({
      prompt_s: (allFirst - start) / 1000,
      prompt_tok_s: (sequences * o.promptTokens) / ((allFirst - start) / 1000),
      decode_tokens: inWindow,
      decode_s: decodeS,
      decode_tok_s: inWindow / decodeS,
    });
    await Promise.all(seqs.map((s) => s.clearHistory()));
  }
  const out = {
    kind: "decode",
    sequences,
    prompt_tokens: o.promptTokens,
    gen_tokens: o.genTokens,
    context_cells: context.contextSize * sequences,
    flash_attn: o.flashAttn,
    batch_wait_ms: sequences > 1 ? o.batchWaitMs : 0,
    threads: context.currentThreads,
    decode_tok_s: Math.max(...results.map((x) => x.decode_tok_s)),
    prompt_tok_s: Math.max(...results.map((x) => x.prompt_tok_s)),
    runs: results,
    ...rss(),
  };
  await context.dispose();
  return out;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const before = rss();
  // CPU only: no GPU probing, never build or download llama.cpp, the prebuilt binary only.
  const llama = await getLlama({
    gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true, progressLogs: false,
    maxThreads: o.threads, logLevel: LlamaLogLevel.error,
  });
  const t0 = performance.now();
  const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0 });
  const loadS = (performance.now() - t0) / 1000;
  const vocab = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 32000;
  console.log(JSON.stringify({
    kind: "load", model: o.model, load_s: loadS, file_bytes: statSync(o.model).size, vocab,
    ...weightBytes(model, statSync(o.model).size),
    llama_cpp: llama.llamaCppRelease, build: llama.buildType, system_info: llama.systemInfo,
    rss_before_mib: before.rss_mib, ...rss(),
  }));
  for (const s of o.sequences) console.log(JSON.stringify(await decode(model, o, s, vocab)));
  await model.dispose();
  await llama.dispose();
}

main().catch((e) => {
  console.error(`llama_cpp_decode: ${e?.stack ?? e}`);
  process.exit(1);
});
