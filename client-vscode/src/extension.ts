// VS Code glue: starts roofline-lsp, mirrors settings, status bar, commands. All decisions
// that can be made without VS Code live in settings.ts, launch.ts, gpus.ts and commands.ts.

import * as cp from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  State,
} from 'vscode-languageclient/node';
import {
  API_KEY_SECRET,
  CLIENT_COMMANDS,
  REPORT_SCHEME,
  SERVER_COMMANDS,
  documentSelector,
  reportPath,
} from './commands';
import { chartTitle, chartWebviewHtml, parseChartAnswer, parseOpenMessage } from './chart';
import { type GpuInfo, gpuPickItems, parseGpuList, statusText } from './gpus';
import {
  CrashTracker,
  LineTail,
  type ServerCommand,
  type StartFailure,
  describeStartFailure,
  findExecutable,
  lastStderrLine,
  serverCommand,
  serverEnv,
} from './launch';
import {
  DEFAULT_API_KEY_ENV,
  type PathContext,
  type ServerConfig,
  type SettingTarget,
  configurationSection,
  gpuTargetChoices,
  needsRestart,
  settingTarget,
  showInlayHints,
  toServerConfig,
} from './settings';

const SHOW_LOGS = 'Show logs';
const OPEN_SETTINGS = 'Open settings';
const RESTART = 'Restart';

function isExecutable(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    if (process.platform !== 'win32') {
      fs.accessSync(file, fs.constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Suppresses the library's own start-failure pop-ups: we show one that says why, with "Show logs". */
class RooflineLanguageClient extends LanguageClient {
  quiet = false;

  override error(text: string, data?: unknown, showNotification: boolean | 'force' = true): void {
    super.error(text, data, this.quiet ? false : showNotification);
  }
}

/** The running server process and what it said, for error messages. */
interface Launch {
  readonly command: ServerCommand;
  child?: cp.ChildProcess;
  spawnError?: { code?: string; message: string };
  exitCode?: number | null;
  signal?: string | null;
  readonly stderr: LineTail;
  exited: Promise<void>;
}

class ReportProvider implements vscode.TextDocumentContentProvider {
  private readonly reports = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  set(uri: vscode.Uri, markdown: string): void {
    this.reports.set(uri.toString(), markdown);
    this.changed.fire(uri);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.reports.get(uri.toString()) ?? '*No roofline report yet: run "Roofline: Show roofline report for current file".*';
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** The open chart panel and what it charts (`uri` undefined: the workspace). */
interface ChartView {
  panel: vscode.WebviewPanel;
  uri: string | undefined;
  label: string;
  timer: ReturnType<typeof setTimeout> | undefined;
  subscriptions: vscode.Disposable[];
}

class Roofline implements vscode.Disposable {
  private client: RooflineLanguageClient | undefined;
  private launch: Launch | undefined;
  private gpus: GpuInfo[] | undefined;
  private readonly crashes = new CrashTracker();
  private readonly status: vscode.StatusBarItem;
  private readonly reports = new ReportProvider();
  private queue: Promise<void> = Promise.resolve();
  private chart: ChartView | undefined;
  private disposed = false;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
  ) {
    this.status = vscode.window.createStatusBarItem('roofline.gpu', vscode.StatusBarAlignment.Right, 100);
    this.status.name = 'Roofline target GPU';
    this.status.command = CLIENT_COMMANDS.selectGpu;
  }

  activate(): void {
    const c = this.context;
    c.subscriptions.push(
      this,
      this.status,
      this.reports,
      vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, this.reports),
      vscode.commands.registerCommand(CLIENT_COMMANDS.showReport, () => this.showReport()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.showChart, (scope?: unknown) => this.showChart(scope)),
      vscode.commands.registerCommand(CLIENT_COMMANDS.selectGpu, () => this.selectGpu()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.setApiKey, () => this.setApiKey()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.clearApiKey, () => this.clearApiKey()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.reanalyze, () => this.reanalyze()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.restart, () => this.restart()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.showLogs, () => this.output.show(true)),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (needsRestart((s) => e.affectsConfiguration(s))) {
          void this.restart();
        } else if (e.affectsConfiguration('roofline')) {
          this.updateStatus();
        }
        if (e.affectsConfiguration('roofline.inlayHints') || e.affectsConfiguration('editor.codeLens')) {
          this.refreshInlayHints();
        }
      }),
      c.secrets.onDidChange((e) => {
        if (e.key === API_KEY_SECRET) {
          void this.restart();
        }
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateStatus()),
    );
    this.updateStatus();
    void this.restart();
  }

  // ---- settings ----------------------------------------------------------------------------

  private pathContext(scope?: vscode.Uri): PathContext {
    const folder =
      (scope !== undefined ? vscode.workspace.getWorkspaceFolder(scope) : undefined) ?? vscode.workspace.workspaceFolders?.[0];
    return { workspaceFolder: folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined, home: os.homedir() };
  }

  /** The server's configuration object for a scope (a document or folder), or the workspace. */
  private serverConfig(scope?: vscode.Uri): ServerConfig {
    const cfg = vscode.workspace.getConfiguration('roofline', scope);
    return toServerConfig((key) => cfg.get(key), this.pathContext(scope));
  }

  /** workspace/didChangeConfiguration with the translated object (the library calls this on every change). */
  private async sendConfiguration(): Promise<void> {
    this.updateStatus();
    await this.client?.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { roofline: this.serverConfig() },
    });
  }

  // ---- server lifecycle ----------------------------------------------------------------------

  /** Restarts are queued so that settings changes arriving together start one server. */
  restart(): Promise<void> {
    this.queue = this.queue.then(async () => {
      await this.stop();
      if (!this.disposed) {
        await this.start();
      }
    });
    return this.queue;
  }

  private async start(): Promise<void> {
    const cfg = vscode.workspace.getConfiguration('roofline');
    const ctx = this.pathContext();
    const command = serverCommand({ path: cfg.get('server.path'), pythonPath: cfg.get('server.pythonPath') }, ctx);
    const cwd = ctx.workspaceFolder ?? os.homedir();
    const resolved = findExecutable(command.command, { env: process.env, cwd, isExecutable });
    if (resolved === undefined) {
      this.startFailed({ command, notFound: true });
      return;
    }
    const apiKey = await this.context.secrets.get(API_KEY_SECRET);
    const { env, warning } = serverEnv(process.env, cfg.get('llm.apiKeyEnv', DEFAULT_API_KEY_ENV), apiKey);
    if (warning !== undefined) {
      void vscode.window.showWarningMessage(`Roofline: ${warning}`);
    }

    const launch: Launch = { command, stderr: new LineTail(), exited: Promise.resolve() };
    this.launch = launch;
    this.output.appendLine(`Starting ${[resolved, ...command.args].join(' ')} (in ${cwd})${apiKey ? ' with the stored API key' : ''}`);
    const serverOptions = async (): Promise<cp.ChildProcess> => {
      const child = cp.spawn(resolved, [...command.args], { cwd, env, stdio: 'pipe', windowsHide: true });
      launch.child = child;
      launch.exited = new Promise<void>((resolve) => {
        child.on('exit', (code, signal) => {
          launch.exitCode = code;
          launch.signal = signal;
          resolve();
        });
        child.on('error', (e: NodeJS.ErrnoException) => {
          launch.spawnError = { code: e.code, message: e.message };
          resolve();
        });
      });
      child.stderr?.on('data', (d: Buffer) => launch.stderr.push(d.toString('utf8')));
      if (child.pid === undefined) {
        await launch.exited;
        throw new Error(describeStartFailure({ command, spawnError: launch.spawnError }));
      }
      return child;
    };

    const clientOptions: LanguageClientOptions = {
      documentSelector: documentSelector(),
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      diagnosticCollectionName: 'roofline',
      initializationOptions: () => this.serverConfig(),
      synchronize: { configurationSection: 'roofline' },
      middleware: {
        // The verdict hint repeats the code lens above it: shown per roofline.inlayHints.
        provideInlayHints: (document, range, token, next) =>
          this.inlayHintsShown(document.uri) ? next(document, range, token) : [],
        workspace: {
          configuration: async (params, token, next) => {
            const fromVsCode = await next(params, token);
            return params.items.map((item, i) => {
              const scope = item.scopeUri !== undefined ? vscode.Uri.parse(item.scopeUri) : undefined;
              const ours = configurationSection(this.serverConfig(scope), item.section);
              return ours !== undefined ? ours : Array.isArray(fromVsCode) ? fromVsCode[i] : null;
            });
          },
          // Send the translated object, not VS Code's raw settings tree.
          didChangeConfiguration: () => this.sendConfiguration(),
        },
      },
      errorHandler: {
        error: (_e, _m, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown, handled: true }),
        closed: async () => {
          if (this.client?.quiet) {
            return { action: CloseAction.DoNotRestart, handled: true }; // start() reports it
          }
          await Promise.race([launch.exited, new Promise((r) => setTimeout(r, 1000))]);
          const why = lastStderrLine(launch.stderr.get());
          if (this.crashes.record(Date.now())) {
            this.output.appendLine(`The Roofline server stopped unexpectedly${why ? `: ${why}` : ''}. Restarting it.`);
            return { action: CloseAction.Restart, handled: true };
          }
          void this.notify(
            `Roofline server stopped 5 times in 3 minutes and will not be restarted${why ? `: ${why}` : '.'}`,
            RESTART,
          );
          this.updateStatus();
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };

    const client = new RooflineLanguageClient('roofline', 'Roofline', serverOptions, clientOptions);
    client.onDidChangeState(() => this.updateStatus());
    this.client = client;
    client.quiet = true;
    try {
      await client.start();
      client.quiet = false;
      this.crashes.reset();
    } catch (e) {
      await Promise.race([launch.exited, new Promise((r) => setTimeout(r, 1000))]);
      const failure: StartFailure = {
        command,
        spawnError: launch.spawnError,
        exitCode: launch.exitCode,
        signal: launch.signal,
        stderr: launch.stderr.get(),
        error: message(e),
      };
      this.client = undefined;
      try {
        await client.dispose(2000);
      } catch {
        // already stopped
      }
      launch.child?.kill();
      this.startFailed(failure);
      return;
    }
    this.gpus = undefined;
    this.updateStatus();
    void this.loadGpus();
  }

  private startFailed(failure: StartFailure): void {
    const text = describeStartFailure(failure);
    this.output.appendLine(text);
    this.updateStatus();
    void this.notify(text, OPEN_SETTINGS);
  }

  private async notify(text: string, ...extra: string[]): Promise<void> {
    const choice = await vscode.window.showErrorMessage(text, SHOW_LOGS, ...extra);
    if (choice === SHOW_LOGS) {
      this.output.show(true);
    } else if (choice === OPEN_SETTINGS) {
      await vscode.commands.executeCommand('workbench.action.openSettings', '@ext:roofline-lsp.roofline-lsp roofline.server');
    } else if (choice === RESTART) {
      await this.restart();
    }
  }

  private async stop(): Promise<void> {
    const client = this.client;
    const launch = this.launch;
    this.client = undefined;
    if (client !== undefined) {
      try {
        await client.stop(2000);
      } catch (e) {
        this.output.appendLine(`Stopping the Roofline server: ${message(e)}`);
      }
    }
    const child = launch?.child;
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill();
    }
    this.updateStatus();
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.chart?.panel.dispose();
    await this.stop();
  }

  /** The running client, or undefined after telling the user what to do. */
  private running(): RooflineLanguageClient | undefined {
    if (this.client?.state === State.Running) {
      return this.client;
    }
    void this.notify('The Roofline server is not running.', RESTART);
    return undefined;
  }

  private async execute(client: LanguageClient, command: string, args: unknown[]): Promise<unknown> {
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  }

  // ---- GPUs ------------------------------------------------------------------------------------

  private async loadGpus(): Promise<GpuInfo[] | undefined> {
    const client = this.client;
    if (client?.state !== State.Running) {
      return undefined;
    }
    try {
      this.gpus = parseGpuList(await this.execute(client, SERVER_COMMANDS.listGpus, []));
    } catch (e) {
      this.output.appendLine(`Asking the server for its GPU profiles failed: ${message(e)}`);
    }
    this.updateStatus();
    return this.gpus;
  }

  private activeDocument(): vscode.TextDocument | undefined {
    const doc = vscode.window.activeTextEditor?.document;
    return doc !== undefined && vscode.languages.match(documentSelector(), doc) > 0 ? doc : undefined;
  }

  private updateStatus(): void {
    const doc = this.activeDocument();
    if (doc === undefined) {
      this.status.hide();
      return;
    }
    const cfg = vscode.workspace.getConfiguration('roofline', doc.uri);
    const { text, tooltip } = statusText(cfg.get('gpu', ''), this.gpus, this.client?.state === State.Running);
    this.status.text = text;
    this.status.tooltip = tooltip;
    this.status.show();
  }

  private async selectGpu(): Promise<void> {
    const client = this.running();
    if (client === undefined) {
      return;
    }
    let list: GpuInfo[];
    try {
      list = parseGpuList(await this.execute(client, SERVER_COMMANDS.listGpus, []));
    } catch (e) {
      void this.notify(`Roofline: could not get the GPU profiles from the server: ${message(e)}`);
      return;
    }
    this.gpus = list;
    const scope = vscode.window.activeTextEditor?.document.uri;
    const cfg = vscode.workspace.getConfiguration('roofline', scope);
    const current = cfg.get('gpu', '');
    const pick = await vscode.window.showQuickPick(gpuPickItems(list, current, cfg.get<string[]>('compareGpus', [])), {
      title: 'Roofline: target GPU',
      placeHolder: `Current target: ${current}. Type to filter by name, vendor or alias.`,
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (pick === undefined || pick.current) {
      return;
    }
    const inspection = cfg.inspect('gpu');
    const choices = gpuTargetChoices(inspection, (vscode.workspace.workspaceFolders?.length ?? 0) > 0);
    let target = settingTarget(inspection);
    let clear: readonly SettingTarget[] = [];
    if (choices.length > 0) {
      const choice = await vscode.window.showQuickPick(choices, {
        title: `Roofline: use ${pick.gpu.name} for`,
        placeHolder: 'Save the target GPU in this workspace or in your user settings',
      });
      if (choice === undefined) {
        return;
      }
      target = choice.target;
      clear = choice.clear;
    }
    const level = (t: SettingTarget): vscode.ConfigurationTarget =>
      t === 'workspaceFolder'
        ? vscode.ConfigurationTarget.WorkspaceFolder
        : t === 'workspace'
          ? vscode.ConfigurationTarget.Workspace
          : vscode.ConfigurationTarget.Global;
    try {
      // The change reaches the server as workspace/didChangeConfiguration.
      for (const t of clear) {
        await cfg.update('gpu', undefined, level(t));
      }
      await cfg.update('gpu', pick.gpu.name, level(target));
    } catch (e) {
      void this.notify(`Roofline: could not save roofline.gpu: ${message(e)}`);
    }
  }

  private inlayHintsShown(scope: vscode.Uri): boolean {
    const mode = vscode.workspace.getConfiguration('roofline', scope).get('inlayHints', 'auto');
    const lenses = vscode.workspace.getConfiguration('editor', scope).get('codeLens', true);
    return showInlayHints(mode, lenses);
  }

  /** Asks VS Code for the hints again (after roofline.inlayHints or editor.codeLens changed). */
  private refreshInlayHints(): void {
    const feature = this.client?.getFeature('textDocument/inlayHint');
    for (const editor of vscode.window.visibleTextEditors) {
      feature?.getProvider(editor.document)?.onDidChangeInlayHints.fire();
    }
  }

  // ---- commands ----------------------------------------------------------------------------------

  private async showReport(): Promise<void> {
    const doc = this.activeDocument();
    if (doc === undefined) {
      void vscode.window.showInformationMessage('Roofline: open a CUDA, HIP, C or C++ file to see its roofline report.');
      return;
    }
    const client = this.running();
    if (client === undefined) {
      return;
    }
    let markdown: unknown;
    try {
      markdown = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'Roofline report' },
        () => this.execute(client, SERVER_COMMANDS.report, [doc.uri.toString()]),
      );
    } catch (e) {
      void this.notify(`Roofline: the report failed: ${message(e)}`);
      return;
    }
    if (typeof markdown !== 'string' || markdown.trim() === '') {
      void this.notify('Roofline: the server returned no report for this file.');
      return;
    }
    const uri = vscode.Uri.from({ scheme: REPORT_SCHEME, path: reportPath(doc.uri.toString()), query: doc.uri.toString() });
    this.reports.set(uri, markdown);
    try {
      await vscode.commands.executeCommand('markdown.showPreviewToSide', uri);
    } catch {
      const text = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(await vscode.languages.setTextDocumentLanguage(text, 'markdown'), {
        viewColumn: vscode.ViewColumn.Beside,
        preview: true,
      });
    }
  }

  /**
   * The roofline chart in a webview, for the workspace or the current file (asked when a
   * source file is active; `scope` 'workspace' or 'file' skips the question). The page comes
   * from the server (`roofline.chart`); a click on a kernel opens it, and the chart is asked
   * for again when the diagnostics change (the verdicts did) while the panel is open.
   */
  private async showChart(scope?: unknown): Promise<void> {
    const doc = this.activeDocument();
    let target: vscode.TextDocument | undefined;
    if (scope === 'file' || scope === 'workspace') {
      target = scope === 'file' ? doc : undefined;
      if (scope === 'file' && doc === undefined) {
        void vscode.window.showInformationMessage('Roofline: open a CUDA, HIP, C or C++ file to chart it.');
        return;
      }
    } else if (doc !== undefined) {
      const name = doc.uri.path.split('/').pop() ?? doc.uri.toString();
      const pick = await vscode.window.showQuickPick(
        [
          { label: 'Workspace', description: 'every kernel under the workspace folders', file: false },
          { label: `Current file: ${name}`, description: doc.uri.fsPath, file: true },
        ],
        { title: 'Roofline chart' },
      );
      if (pick === undefined) {
        return;
      }
      target = pick.file ? doc : undefined;
    }
    if (this.running() === undefined) {
      return;
    }
    const uri = target?.uri.toString();
    const label = target === undefined ? 'workspace' : (target.uri.path.split('/').pop() ?? uri ?? '');
    if (this.chart === undefined) {
      const panel = vscode.window.createWebviewPanel('roofline.chart', 'Roofline chart', vscode.ViewColumn.Beside, {
        enableScripts: true,
        localResourceRoots: [],
        retainContextWhenHidden: true,
      });
      const view: ChartView = { panel, uri, label, timer: undefined, subscriptions: [] };
      view.subscriptions.push(
        panel.webview.onDidReceiveMessage((m: unknown) => void this.openKernel(m)),
        vscode.languages.onDidChangeDiagnostics(() => {
          // verdicts changed: chart again, once the burst of diagnostics is over
          if (view.timer !== undefined) {
            clearTimeout(view.timer);
          }
          view.timer = setTimeout(() => void this.refreshChart(view), 1500);
        }),
      );
      panel.onDidDispose(() => {
        if (view.timer !== undefined) {
          clearTimeout(view.timer);
        }
        view.subscriptions.forEach((d) => d.dispose());
        if (this.chart === view) {
          this.chart = undefined;
        }
      });
      this.chart = view;
    } else {
      this.chart.uri = uri;
      this.chart.label = label;
      this.chart.panel.reveal(vscode.ViewColumn.Beside);
    }
    await this.refreshChart(this.chart, true);
  }

  private async refreshChart(view: ChartView, loud = false): Promise<void> {
    const client = this.client;
    if (client?.state !== State.Running) {
      return;
    }
    let answer: unknown;
    try {
      answer = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'Roofline chart' },
        () => this.execute(client, SERVER_COMMANDS.chart, view.uri === undefined ? [] : [view.uri]),
      );
    } catch (e) {
      if (loud) {
        void this.notify(`Roofline: the chart failed: ${message(e)}`);
      }
      return;
    }
    if (this.chart !== view) {
      return; // closed meanwhile
    }
    const parsed = parseChartAnswer(answer);
    view.panel.title = typeof parsed === 'string' ? 'Roofline chart' : chartTitle(view.label, parsed);
    view.panel.webview.html = chartWebviewHtml(answer);
  }

  private async openKernel(msg: unknown): Promise<void> {
    const target = parseOpenMessage(msg);
    if (target === undefined) {
      return;
    }
    try {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(target.path));
      const at = new vscode.Position(target.line - 1, 0);
      await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, selection: new vscode.Range(at, at) });
    } catch (e) {
      void this.notify(`Roofline: cannot open ${target.path}: ${message(e)}`);
    }
  }

  private async reanalyze(): Promise<void> {
    const client = this.running();
    if (client !== undefined) {
      try {
        await this.execute(client, SERVER_COMMANDS.reanalyze, []);
      } catch (e) {
        void this.notify(`Roofline: re-analysis failed: ${message(e)}`);
      }
    }
  }

  private async setApiKey(): Promise<void> {
    const cfg = vscode.workspace.getConfiguration('roofline');
    const name = cfg.get('llm.apiKeyEnv', DEFAULT_API_KEY_ENV);
    const key = await vscode.window.showInputBox({
      title: 'Roofline: API key',
      prompt: `API key for ${cfg.get('llm.baseUrl', 'the LLM endpoint')}. Kept in VS Code's secret storage and given to the server as $${name}; never written to settings. Leave empty to remove the stored key.`,
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => (/[\r\n]/.test(v) ? 'An API key is one line.' : undefined),
    });
    if (key === undefined) {
      return;
    }
    if (key.trim() === '') {
      await this.clearApiKey();
      return;
    }
    await this.context.secrets.store(API_KEY_SECRET, key.trim()); // onDidChange restarts the server
    void vscode.window.showInformationMessage('Roofline: API key saved in secret storage; the server restarts to use it.');
  }

  private async clearApiKey(): Promise<void> {
    await this.context.secrets.delete(API_KEY_SECRET);
    void vscode.window.showInformationMessage('Roofline: stored API key removed.');
  }
}

let roofline: Roofline | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('Roofline');
  context.subscriptions.push(output);
  roofline = new Roofline(context, output);
  roofline.activate();
}

export async function deactivate(): Promise<void> {
  await roofline?.dispose();
  roofline = undefined;
}
