// Command ids and document selection shared by the extension, its manifest and its tests.

/** Commands the server executes (workspace/executeCommand). vscode-languageclient registers these ids itself. */
export const SERVER_COMMANDS = {
  listGpus: 'roofline.listGpus',
  selectGpu: 'roofline.selectGpu',
  reanalyze: 'roofline.reanalyze',
  report: 'roofline.report',
  explainKernel: 'roofline.explainKernel',
  chart: 'roofline.chart',
} as const;

/** The extension's own commands; a separate `roofline.client.` namespace so they never collide. */
export const CLIENT_COMMANDS = {
  showReport: 'roofline.client.showReport',
  showChart: 'roofline.client.showChart',
  selectGpu: 'roofline.client.selectGpu',
  setApiKey: 'roofline.client.setApiKey',
  clearApiKey: 'roofline.client.clearApiKey',
  reanalyze: 'roofline.client.reanalyze',
  restart: 'roofline.client.restart',
  showLogs: 'roofline.client.showLogs',
} as const;

/** Language ids the server is started for. */
export const LANGUAGES = ['cuda-cpp', 'cuda', 'hip', 'cpp', 'c'] as const;

/** File patterns analysed whatever language VS Code gives them (a .hip file is often plain text). */
export const FILE_PATTERNS = ['**/*.cu', '**/*.cuh', '**/*.hip'] as const;

export type DocumentFilter =
  | { readonly scheme: string; readonly language: string }
  | { readonly scheme: string; readonly pattern: string };

/** The language client's document selector: saved and unsaved documents. */
export function documentSelector(): DocumentFilter[] {
  const out: DocumentFilter[] = [];
  for (const scheme of ['file', 'untitled']) {
    for (const language of LANGUAGES) {
      out.push({ scheme, language });
    }
  }
  for (const pattern of FILE_PATTERNS) {
    out.push({ scheme: 'file', pattern });
  }
  return out;
}

/** Secret-storage key of the LLM API key. */
export const API_KEY_SECRET = 'roofline.llm.apiKey';

/** Scheme of the virtual documents holding roofline reports. */
export const REPORT_SCHEME = 'roofline-report';

/** Path of a report's virtual document, named after the analysed file. */
export function reportPath(fileUri: string): string {
  const withoutQuery = fileUri.split(/[?#]/)[0];
  const last = withoutQuery.split(/[/:]/).pop() ?? '';
  let base: string;
  try {
    base = decodeURIComponent(last);
  } catch {
    base = last;
  }
  base = base.replace(/[\\/:]/g, '_') || 'untitled';
  return `/Roofline report - ${base}.md`;
}
