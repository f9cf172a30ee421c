// Opens a stepscope HTML report in Debian's Chromium (headless, through
// playwright-core) and checks what a person would see:
//   node report_html_check.mjs REPORT.html [--sections a,b] [--text STR]... [--screenshot PNG]
// --sections: sections that must be shown (steps, counters, flame, functions, ...);
// --text: a string that must appear on the page as text (repeatable).
// Exits 1 with a message on the first failure; prints a JSON summary otherwise.
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";
import path from "node:path";

function parseArgs(argv) {
  const args = { file: null, sections: [], texts: [], screenshot: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--sections") args.sections = argv[++i].split(",").filter(Boolean);
    else if (a === "--text") args.texts.push(argv[++i]);
    else if (a === "--screenshot") args.screenshot = argv[++i];
    else args.file = a;
  }
  if (!args.file) throw new Error("usage: report_html_check.mjs REPORT.html [--sections a,b] [--text STR]...");
  return args;
}

const failures = [];
function check(condition, message) {
  if (!condition) failures.push(message);
}

const args = parseArgs(process.argv.slice(2));
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"], headless: true });
const summary = {};
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  const dialogs = [];
  const requests = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("dialog", async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  page.on("request", (r) => { if (!r.url().startsWith("file:") && !r.url().startsWith("data:")) requests.push(r.url()); });

  await page.goto(pathToFileURL(path.resolve(args.file)).href);
  await page.waitForSelector("body[data-rendered=true]", { timeout: 20000 });

  const state = await page.evaluate(() => {
    const visible = (id) => { const s = document.getElementById(id); return !!s && !s.hidden; };
    const canvases = Array.from(document.querySelectorAll("canvas"));
    // A chart has content when some pixel of its canvas is not transparent.
    const drawn = canvases.filter((c) => {
      if (!c.width || !c.height) return false;
      const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      for (let i = 3; i < data.length; i += 4 * 7) if (data[i] !== 0) return true;
      return false;
    }).length;
    const flameRects = document.querySelectorAll("#flame svg rect").length;
    const foreign = Array.from(document.querySelectorAll("script")).filter((s) => s.id !== "stepscope-data" && /alert\(1\)/.test(s.textContent));
    return {
      verdict: document.getElementById("verdict").textContent.trim(),
      findings: document.querySelectorAll("#findings > li").length,
      sections: Array.from(document.querySelectorAll("main > section")).filter((s) => !s.hidden).map((s) => s.id.replace(/-section$/, "")),
      renderErrors: Array.from(document.querySelectorAll(".render-error")).map((e) => e.textContent),
      canvases: canvases.length, drawnCanvases: drawn, flameRects,
      images: document.querySelectorAll("img").length,
      injectedScripts: foreign.length,
      text: document.body.innerText,
      flameTitles: Array.from(document.querySelectorAll("#flame svg title")).map((t) => t.textContent),
      tableRows: document.querySelectorAll("table tbody tr").length,
    };
  });
  summary.verdict = state.verdict;
  summary.sections = state.sections;
  summary.canvases = state.canvases;
  summary.drawnCanvases = state.drawnCanvases;
  summary.flameRects = state.flameRects;
  summary.findings = state.findings;

  check(errors.length === 0, "console errors: " + JSON.stringify(errors));
  check(dialogs.length === 0, "dialogs opened (script ran): " + JSON.stringify(dialogs));
  check(requests.length === 0, "network requests: " + JSON.stringify(requests));
  check(state.verdict.length > 0, "the verdict is empty");
  check(state.renderErrors.length === 0, "sections failed: " + JSON.stringify(state.renderErrors));
  for (const s of args.sections) check(state.sections.includes(s), `section ${s} not shown (shown: ${state.sections})`);
  if (args.sections.includes("flame")) check(state.flameRects >= 3, `flame graph has ${state.flameRects} frames`);
  if (args.sections.includes("steps") || args.sections.includes("counters")) {
    check(state.drawnCanvases >= 1 && state.drawnCanvases === state.canvases,
          `${state.drawnCanvases} of ${state.canvases} chart canvases have content`);
  }
  check(state.images === 0, `${state.images} <img> elements: markup from a name was inserted`);
  check(state.injectedScripts === 0, "a <script> element from a name was inserted");
  for (const t of args.texts) {
    check(state.text.includes(t) || state.flameTitles.some((title) => title.includes(t)), `text not shown as text: ${t}`);
  }

  // The flame graph's phase filter redraws without errors.
  const phases = await page.$$eval("#flame-phase option", (os) => os.map((o) => o.value));
  for (const value of phases) {
    await page.selectOption("#flame-phase", value);
    const rects = await page.$$eval("#flame svg rect", (rs) => rs.length);
    check(rects >= 1, `flame graph empty for phase option '${value}'`);
  }
  if (phases.length) await page.selectOption("#flame-phase", "");

  // Sorting a table by a numeric column orders its rows.
  if (state.sections.includes("functions")) {
    const header = page.locator("#functions-table th", { hasText: /^total$/ });
    await header.click();  // numeric columns sort descending first
    // Read the "total %" column: one unit throughout, unlike durations.
    const values = await page.$$eval("#functions-table tbody tr td:nth-child(7)", (tds) => tds.map((td) => parseFloat(td.textContent)));
    const sorted = values.every((v, i) => i === 0 || values[i - 1] >= v);
    check(sorted, "functions not sorted by total after a click: " + values.slice(0, 5));
    summary.sortedRows = values.length;
  }
  check(errors.length === 0, "console errors after interaction: " + JSON.stringify(errors));
  if (args.screenshot) await page.screenshot({ path: args.screenshot, fullPage: true });
} finally {
  await browser.close();
}
if (failures.length) {
  console.error("FAIL: " + failures.join("\n      "));
  process.exit(1);
}
console.log(JSON.stringify(summary));
