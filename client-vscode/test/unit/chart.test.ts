// The chart webview's HTML comes from the server's answer to `roofline.chart`: a real page the
// Python package draws (`roofline-lsp report --html`, the same renderer) when it is installed,
// checked here as the webview gets it; malformed answers give a page that says why.

import assert from 'node:assert/strict';
import * as cp from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { chartTitle, chartWebviewHtml, parseChartAnswer, parseOpenMessage } from '../../src/chart';
import { clientRoot } from '../manifest';

/** A page drawn by the installed roofline-lsp, or undefined when it is not installed. */
function realPage(): string | undefined {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roofline-chart-'));
  const out = path.join(dir, 'chart.html');
  const fixture = path.join(clientRoot(), 'test', 'fixtures', 'scale_add.cu');
  const run = cp.spawnSync('roofline-lsp', ['report', fixture, '--gpu', 'h100,a100', '--counts', 'source', '--html', out], {
    encoding: 'utf8',
  });
  return run.status === 0 ? fs.readFileSync(out, 'utf8') : undefined;
}

const page = realPage();
const inCi = !['', '0', 'false', 'no'].includes((process.env.CI ?? '').toLowerCase());
const skip = page === undefined && !inCi ? 'roofline-lsp is not installed' : false;

describe('chart webview', () => {
  test('the webview shows the server\'s page as it is: points, ceilings, its own policy', { skip }, () => {
    assert.ok(page !== undefined, 'roofline-lsp must be installed under CI');
    const answer = { html: page, path: null, kernels: 1, gpus: ['H100-SXM5-80GB', 'A100-SXM4-80GB'] };
    const html = chartWebviewHtml(answer);
    assert.equal(html, page);
    assert.equal((html.match(/class="pt estimated/g) ?? []).length, 2, 'one point per GPU');
    assert.equal((html.match(/class="ceiling"/g) ?? []).length, 8, 'four ceilings per GPU');
    assert.match(html, /scale_add/);
    assert.match(html, /Content-Security-Policy" content="default-src 'none'/);
    assert.match(html, /acquireVsCodeApi/, 'the page posts clicks to the extension');
    const parsed = parseChartAnswer(answer);
    assert.ok(typeof parsed !== 'string');
    assert.equal(chartTitle('workspace', parsed), 'Roofline: workspace on H100-SXM5-80GB, A100-SXM4-80GB');
  });

  test('a malformed answer gives a page saying why, escaped, with no script', () => {
    for (const [answer, why] of [
      [null, 'the server sent no chart'],
      ['<script>', 'the server sent no chart'],
      [{ html: 3 }, "the server's chart has no page"],
      [{ html: '<p>no drawing</p>' }, "the server's chart has no page"],
    ] as const) {
      const html = chartWebviewHtml(answer);
      assert.ok(html.includes(why.replace("'", '&#39;')), html);
      assert.ok(!html.includes('<script'), html);
    }
  });

  test('messages from the page open a kernel only when well formed', () => {
    assert.deepEqual(parseOpenMessage({ command: 'open', path: '/w/k.cu', line: 12 }), { path: '/w/k.cu', line: 12 });
    assert.deepEqual(parseOpenMessage({ command: 'open', path: '/w/k.cu', line: -3 }), { path: '/w/k.cu', line: 1 });
    assert.equal(parseOpenMessage({ command: 'open', path: '' }), undefined);
    assert.equal(parseOpenMessage({ command: 'run', path: '/w/k.cu' }), undefined);
    assert.equal(parseOpenMessage('open'), undefined);
  });
});
