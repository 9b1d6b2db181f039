// The roofline chart webview: its HTML built from the server's answer to `roofline.chart`,
// and the messages the page posts back (a click on a kernel opens it). No vscode import here,
// so the unit tests run it as it is.

/** What the server's `roofline.chart` command answers. */
export interface ChartAnswer {
  html: string;
  kernels: number;
  gpus: string[];
  path: string | null;
}

/** The answer, or why it is not one. */
export function parseChartAnswer(answer: unknown): ChartAnswer | string {
  if (typeof answer !== 'object' || answer === null) {
    return 'the server sent no chart';
  }
  const a = answer as Record<string, unknown>;
  if (typeof a.html !== 'string' || !/<svg[\s>]/.test(a.html)) {
    return 'the server\'s chart has no page';
  }
  const gpus = Array.isArray(a.gpus) ? a.gpus.filter((g): g is string => typeof g === 'string') : [];
  return {
    html: a.html,
    kernels: typeof a.kernels === 'number' ? a.kernels : 0,
    gpus,
    path: typeof a.path === 'string' ? a.path : null,
  };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

/**
 * The webview's HTML: the server's page as it is (self-contained; its own Content-Security-
 * Policy allows its one script by hash and nothing from the network), or a short page saying
 * why there is no chart.
 */
export function chartWebviewHtml(answer: unknown): string {
  const parsed = parseChartAnswer(answer);
  if (typeof parsed !== 'string') {
    return parsed.html;
  }
  return (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">' +
    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">' +
    '<title>Roofline chart</title></head><body><p class="roofline-error">Roofline: ' +
    escapeHtml(parsed) +
    '.</p></body></html>'
  );
}

/** The panel's title: the scope and the GPUs charted. */
export function chartTitle(scope: string, answer: ChartAnswer): string {
  const gpus = answer.gpus.length > 0 ? ` on ${answer.gpus.join(', ')}` : '';
  return `Roofline: ${scope}${gpus}`;
}

/** A kernel to open, from a message the page posted (`{command: 'open', path, line}`). */
export function parseOpenMessage(message: unknown): { path: string; line: number } | undefined {
  if (typeof message !== 'object' || message === null) {
    return undefined;
  }
  const m = message as Record<string, unknown>;
  if (m.command !== 'open' || typeof m.path !== 'string' || m.path === '') {
    return undefined;
  }
  const line = typeof m.line === 'number' && Number.isInteger(m.line) && m.line >= 1 ? m.line : 1;
  return { path: m.path, line };
}
