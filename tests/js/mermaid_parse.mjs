// Parse Mermaid flowcharts with the real mermaid parser (under jsdom) and print what it
// read, so tests can check that drawn text stays text.
//
// A long-running helper: each line of stdin is a JSON string (a Mermaid source); each
// answer is one JSON line: {"ok": true, "type", "title", "nodes": {id: text},
// "edges": [[start, end, text]], "subgraphs": [[id, title, [node ids]]], "title" (from the
// front matter, or null), "config" (what directives and front matter set)} or
// {"ok": false, "error": message}. Texts are decoded as the renderer shows them:
// entities (#34;) to characters, <br> to a line break.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!DOCTYPE html><body></body>", { pretendToBeVisual: true });
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

// The front matter's YAML reader is mermaid's own (bundled js-yaml), found through the
// import line of mermaid.core.mjs, so the title is read exactly as mermaid reads it.
const corePath = createRequire(import.meta.url).resolve("mermaid/dist/mermaid.core.mjs");
const yamlChunk = readFileSync(corePath, "utf8").match(
  /import \{\s*JSON_SCHEMA,\s*load\s*\} from "([^"]+)"/,
);
const yaml = yamlChunk ? await import(pathToFileURL(new URL(yamlChunk[1], pathToFileURL(corePath)).pathname).href) : null;
const FRONT_MATTER = /^([^\S\n\r]*)-{3}\s*[\n\r](.*?)[\n\r]\1-{3}\s*[\n\r]+/s;

function frontMatterTitle(source) {
  const match = source.match(FRONT_MATTER);
  if (!match || !yaml) return null;
  const data = yaml.load(match[2], { schema: yaml.JSON_SCHEMA }) ?? {};
  return data.title ?? null;
}

function decode(text) {
  if (text === undefined || text === null) return "";
  return String(text)
    .replace(/ﬂ°°(\d+)¶ß/g, (_, code) => String.fromCodePoint(Number(code)))
    .replace(/ﬂ°(\w+)¶ß/g, (_, name) => `&${name};`) // never written by flowlib: shows up
    .replace(/<br\s*\/?>/gi, "\n");
}

async function parse(source) {
  const diagram = await mermaid.mermaidAPI.getDiagramFromText(source);
  const db = diagram.db;
  const nodes = {};
  for (const vertex of db.getVertices().values()) nodes[vertex.id] = decode(vertex.text);
  const edges = db.getEdges().map((edge) => [edge.start, edge.end, decode(edge.text)]);
  const subgraphs = (db.getSubGraphs ? db.getSubGraphs() : []).map((sub) => [
    sub.id,
    decode(sub.title),
    [...sub.nodes],
  ]);
  // What mermaid.parse() adds to the config (front matter config, %%{init}%% directives).
  const { config } = await mermaid.parse(source);
  const title = frontMatterTitle(source);
  return { ok: true, type: diagram.type, title, config, nodes, edges, subgraphs };
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let answer;
  try {
    answer = await parse(JSON.parse(line));
  } catch (error) {
    answer = { ok: false, error: String(error && error.message ? error.message : error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
