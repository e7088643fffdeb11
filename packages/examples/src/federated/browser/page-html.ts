/**
 * The HTML of the browser mode's page: where page.js shows the tab's client,
 * its data, and each round as it trains.
 * @module
 */

const STYLE = `
body { font: 15px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2330; max-width: 760px; }
h1 { font-size: 20px; margin: 0 0 4px; }
.sub { color: #5b6475; margin: 0 0 16px; }
.cards { display: flex; gap: 12px; margin: 12px 0; }
.card { flex: 1; border: 1px solid #d8dde6; border-radius: 8px; padding: 10px 12px; }
.card b { display: block; font-size: 24px; }
.card span { color: #5b6475; font-size: 13px; }
.bar { height: 10px; background: #e8ebf1; border-radius: 5px; overflow: hidden; }
.bar div { height: 100%; width: 0; background: #3b6fd8; transition: width .2s; }
table { border-collapse: collapse; width: 100%; margin-top: 12px; font-variant-numeric: tabular-nums; }
th, td { text-align: right; padding: 3px 8px; border-bottom: 1px solid #eef0f4; }
th:first-child, td:first-child { text-align: left; }
#chart { margin-top: 14px; font-size: 11px; fill: #5b6475; }
.state-error, .state-no-slot { color: #b3261e; }
.state-done { color: #1e7b34; }
`;

/** The page: a status line, the round, accuracy cards and a table of rounds, filled in by page.js. */
export function pageHtml(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tensorbus: federated client in a tab</title>
<link rel="icon" href="data:,"><style>${STYLE}</style></head>
<body>
<h1>Federated averaging: this tab is a client</h1>
<p class="sub" id="who">asking the page server for a client slot…</p>
<p id="state" class="state-connecting">connecting</p>
<div class="cards">
  <div class="card"><b id="round">–</b><span>round</span></div>
  <div class="card"><b id="global">–</b><span>global model, held-out accuracy</span></div>
  <div class="card"><b id="local-acc">–</b><span>local accuracy (own data)</span></div>
  <div class="card"><b id="local-loss">–</b><span>local loss</span></div>
</div>
<div class="bar"><div id="progress"></div></div>
<svg id="chart" viewBox="0 0 740 152" width="100%" role="img" aria-label="held-out accuracy of the global model per round"></svg>
<table><thead><tr><th>round</th><th>global accuracy (start)</th><th>local loss</th><th>local accuracy</th><th>update</th></tr></thead><tbody id="rounds"></tbody></table>
<script type="module" src="bundle.js"></script>
</body></html>
`;
}
