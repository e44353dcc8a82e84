// A minimal OpenAI-compatible server over node-llama-cpp, on 127.0.0.1 only, used by
// `cargo xtask judge-live` (from shared/research/local-llm.md, route B).
// Usage: node server.mjs MODEL.gguf PORT
// Serves GET /v1/models and POST /v1/chat/completions; `response_format` json_schema and
// json_object (+schema) are enforced with a grammar. Requests are served one at a time.
import http from "node:http";
import {getLlama, LlamaChatSession} from "node-llama-cpp";

const [modelPath, port = "8090"] = process.argv.slice(2);
const llama = await getLlama({gpu: false, build: "never", logLevel: "warn"});
const model = await llama.loadModel({modelPath});
const ctx = await model.createContext({contextSize: 4096, threads: 2});
const seq = ctx.getSequence();
let queue = Promise.resolve();

async function complete(body) {
  const msgs = body.messages || [], last = msgs[msgs.length - 1];
  const history = msgs.slice(0, -1).map(m => m.role === "assistant" ? {type: "model", response: [m.content]}
                                                                      : {type: m.role === "system" ? "system" : "user", text: m.content});
  await seq.clearHistory();
  const session = new LlamaChatSession({contextSequence: seq, autoDisposeSequence: false});
  session.setChatHistory(history);
  let grammar; const rf = body.response_format;
  if (rf && rf.type === "json_schema") grammar = await llama.createGrammarForJsonSchema(rf.json_schema.schema);
  else if (rf && rf.type === "json_object") grammar = rf.schema ? await llama.createGrammarForJsonSchema(rf.schema) : await llama.getGrammarFor("json");
  const {responseText: text, stopReason} = await session.promptWithMeta(last.content, {grammar, maxTokens: body.max_tokens ?? 256, temperature: body.temperature ?? 0, seed: body.seed});
  session.dispose({disposeSequence: false});
  const pt = model.tokenize(msgs.map(m => m.content).join("\n")).length, ct = model.tokenize(text).length;
  return {id: "chatcmpl-local", object: "chat.completion", created: Math.floor(Date.now() / 1000), model: body.model || "local",
          choices: [{index: 0, message: {role: "assistant", content: text}, finish_reason: stopReason === "maxTokens" ? "length" : "stop"}],
          usage: {prompt_tokens: pt, completion_tokens: ct, total_tokens: pt + ct}};
}

http.createServer((req, res) => {
  const send = (c, o) => { res.writeHead(c, {"Content-Type": "application/json"}); res.end(JSON.stringify(o)); };
  if (req.method === "GET" && req.url === "/v1/models") return send(200, {object: "list", data: [{id: "local", object: "model"}]});
  if (req.method !== "POST" || req.url !== "/v1/chat/completions") return send(404, {error: {message: "not found"}});
  let data = ""; req.on("data", c => data += c);
  req.on("end", () => {
    let body;
    try { body = JSON.parse(data); } catch (e) { return send(400, {error: {message: "body is not JSON"}}); }
    queue = queue.then(() => complete(body)).then(r => send(200, r), e => send(500, {error: {message: String(e)}}));
  });
}).listen(Number(port), "127.0.0.1", () => console.log(`listening on 127.0.0.1:${port}`));
