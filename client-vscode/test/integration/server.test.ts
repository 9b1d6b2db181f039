// Starts the installed roofline-lsp server exactly as the extension does -- same command line
// (serverCommand + findExecutable), same environment (serverEnv), same settings translated to
// initializationOptions (toServerConfig) and the same answers to workspace/configuration
// (configurationSection) -- then asks for a hover, the GPU list and a report over stdio.
// Skips only when the roofline-lsp executable is not installed (and fails then under CI=true).

import assert from 'node:assert/strict';
import * as cp from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import {
  ConfigurationRequest,
  DidChangeConfigurationNotification,
  DidOpenTextDocumentNotification,
  ExecuteCommandRequest,
  ExitNotification,
  HoverRequest,
  InitializeRequest,
  InitializedNotification,
  LogMessageNotification,
  ShowMessageNotification,
  type Hover,
  type InitializeResult,
  type MarkedString,
  type ProtocolConnection,
  RegistrationRequest,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  UnregistrationRequest,
  WorkDoneProgressCreateRequest,
  createProtocolConnection,
} from 'vscode-languageserver-protocol/node';
import { chartWebviewHtml, parseChartAnswer } from '../../src/chart';
import { SERVER_COMMANDS } from '../../src/commands';
import { findGpu, gpuPickItems, parseGpuList } from '../../src/gpus';
import { LineTail, findExecutable, serverCommand, serverEnv } from '../../src/launch';
import { type ServerConfig, configurationSection, toServerConfig } from '../../src/settings';
import { clientRoot, readManifest, settingsGetter } from '../manifest';

const manifest = readManifest();
const fixtures = path.join(clientRoot(), 'test', 'fixtures');
const fixture = path.join(fixtures, 'scale_add.cu');
const fixtureUri = pathToFileURL(fixture).href;
const pathCtx = { workspaceFolder: fixtures, home: os.homedir() };

/** What a user might have in settings.json (keys below `roofline.`); the rest are defaults. */
const userSettings: Record<string, unknown> = {
  gpu: 'h100',
  backend: 'static',
  counts: 'source',
  debounceMs: 0,
  args: 'n=1<<22',
  'llm.model': 'integration-test-model',
  'llm.apiKeyEnv': 'ROOFLINE_TEST_API_KEY',
  'server.path': '',
  'server.pythonPath': '',
};

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

const get = settingsGetter(manifest, userSettings);
const command = serverCommand({ path: get('server.path'), pythonPath: get('server.pythonPath') }, pathCtx);
const resolved = findExecutable(command.command, { env: process.env, cwd: fixtures, isExecutable });
const missing =
  resolved === undefined ? `"${command.command}" is not installed (pip install -e . from the repository root)` : undefined;
// Locally a missing server skips these tests; under CI it is a failure (a missing install step).
const skip = missing !== undefined && process.env.CI !== 'true' ? missing : false;

function hoverText(hover: Hover | null): string {
  if (hover === null) {
    return '';
  }
  const one = (m: MarkedString | { kind: string; value: string }): string => (typeof m === 'string' ? m : m.value);
  return Array.isArray(hover.contents) ? hover.contents.map(one).join('\n') : one(hover.contents);
}

/** A position two characters into the first occurrence of `needle` (ASCII fixture). */
function position(text: string, needle: string): { line: number; character: number } {
  const at = text.indexOf(needle);
  assert.ok(at >= 0, `${needle} not in fixture`);
  const before = text.slice(0, at).split('\n');
  return { line: before.length - 1, character: before[before.length - 1].length + 2 };
}

async function until<T>(what: string, ms: number, attempt: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await attempt();
    if (got !== undefined) {
      return got;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('roofline-lsp launched as the extension launches it', { timeout: 120_000 }, () => {
  let child: cp.ChildProcess;
  let connection: ProtocolConnection;
  let config: ServerConfig;
  let died: Promise<never>;
  const stderr = new LineTail(40);
  const configurationRequests: (string | undefined)[] = [];
  const text = fs.readFileSync(fixture, 'utf8');
  const kernelName = position(text, 'scale_add(int'); // inside the kernel's name where it is defined

  before(async () => {
    config = toServerConfig(get, pathCtx);
    if (skip) {
      return;
    }
    if (missing !== undefined) {
      throw new Error(missing);
    }
    const { env, warning } = serverEnv(process.env, get('llm.apiKeyEnv'), 'sk-integration-test-not-a-key');
    assert.equal(warning, undefined);
    assert.equal(env.ROOFLINE_TEST_API_KEY, 'sk-integration-test-not-a-key');
    child = cp.spawn(resolved as string, [...command.args], { cwd: fixtures, env, stdio: 'pipe' });
    child.stderr?.on('data', (d: Buffer) => stderr.push(d.toString('utf8')));
    died = new Promise<never>((_, reject) => {
      const fail = (why: string) =>
        reject(new Error(`the server ${why} before answering; its stderr ends with:\n${stderr.get().join('\n')}`));
      child.once('error', (e) => fail(`could not be spawned (${e.message})`));
      child.once('exit', (code, signal) => setTimeout(() => fail(`exited (code ${code}, signal ${signal})`), 100));
    });
    died.catch(() => undefined); // observed by the requests that race it
    connection = createProtocolConnection(
      new StreamMessageReader(child.stdout as NodeJS.ReadableStream),
      new StreamMessageWriter(child.stdin as NodeJS.WritableStream),
    );
    connection.onRequest(ConfigurationRequest.type, (params) => {
      // The extension's middleware: the roofline section from the same translation.
      return params.items.map((item) => {
        configurationRequests.push(item.section);
        return configurationSection(config, item.section) ?? null;
      });
    });
    connection.onRequest(RegistrationRequest.type, () => undefined);
    connection.onRequest(UnregistrationRequest.type, () => undefined);
    connection.onRequest(WorkDoneProgressCreateRequest.type, () => undefined);
    connection.onNotification(LogMessageNotification.type, (m) => stderr.push(`[log] ${m.message}\n`));
    connection.onNotification(ShowMessageNotification.type, (m) => stderr.push(`[message] ${m.message}\n`));
    connection.listen();

    const result: InitializeResult = await alive(connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      clientInfo: { name: 'roofline-vscode-integration-test' },
      rootUri: pathToFileURL(fixtures).href,
      workspaceFolders: [{ uri: pathToFileURL(fixtures).href, name: 'fixtures' }],
      initializationOptions: config,
      capabilities: {
        workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: true }, workspaceFolders: true },
        textDocument: {
          hover: { contentFormat: ['markdown', 'plaintext'] },
          synchronization: { didSave: true },
          publishDiagnostics: {},
        },
        window: { workDoneProgress: true },
      },
    }));
    const commands = result.capabilities.executeCommandProvider?.commands ?? [];
    for (const id of [SERVER_COMMANDS.listGpus, SERVER_COMMANDS.report, SERVER_COMMANDS.chart]) {
      assert.ok(commands.includes(id), `server advertises ${id} (got ${commands.join(', ')})`);
    }
    await connection.sendNotification(InitializedNotification.type, {});
    await connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri: fixtureUri, languageId: 'cuda-cpp', version: 1, text },
    });
  });

  after(async () => {
    if (connection !== undefined) {
      try {
        await Promise.race([connection.sendRequest(ShutdownRequest.type), new Promise((r) => setTimeout(r, 5000))]);
        await connection.sendNotification(ExitNotification.type);
      } catch {
        // the process may already be gone
      }
    }
    if (child !== undefined && child.exitCode === null) {
      await Promise.race([new Promise((r) => child.once('exit', r)), new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) {
        child.kill();
      }
    }
    connection?.dispose();
  });

  /** A request's answer, or the server's exit status and stderr if it dies first. */
  const alive = <T>(request: Promise<T>): Promise<T> => Promise.race([request, died]);
  const execute = (command: string, args: unknown[]) =>
    alive(connection.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }));
  const hover = () =>
    alive(connection.sendRequest(HoverRequest.type, { textDocument: { uri: fixtureUri }, position: kernelName }));

  test('a hover on the kernel name tells whether it is bound by compute or bandwidth', { skip }, async () => {
    const shown = await until('a hover', 30_000, async () => hoverText(await hover()) || undefined);
    assert.match(shown, /bound/i);
  });

  test("the quick pick is built from the server's GPU profiles", { skip }, async () => {
    const list = parseGpuList(await execute(SERVER_COMMANDS.listGpus, []));
    assert.ok(list.length >= 2, `expected several GPU profiles, got ${list.length}`);
    const target = findGpu(list, String(config.gpu));
    assert.ok(target !== undefined, `the default GPU "${String(config.gpu)}" is one of the server's profiles or aliases`);
    assert.ok(Object.keys(target.ridges).length > 0, 'profiles carry ridge points');
    const items = gpuPickItems(list, String(config.gpu));
    assert.equal(items[0].gpu.name, target.name);
    assert.equal(items.filter((i) => i.current).length, 1);
  });

  test('the report command returns the Markdown report of the file', { skip }, async () => {
    const report = await execute(SERVER_COMMANDS.report, [fixtureUri]);
    assert.equal(typeof report, 'string');
    assert.match(report as string, /scale_add/);
    assert.match(report as string, /bound/i);
  });

  test('Show chart: the webview HTML is built from the server\'s roofline.chart answer', { skip }, async () => {
    for (const args of [[fixtureUri], []]) {
      // the current file, then the workspace (the fixtures folder, the open file from its buffer)
      const answer = await execute(SERVER_COMMANDS.chart, args);
      const parsed = parseChartAnswer(answer);
      assert.ok(typeof parsed !== 'string', String(parsed));
      assert.ok(parsed.kernels >= 1);
      assert.deepEqual(parsed.gpus.length, 1);
      const html = chartWebviewHtml(answer);
      assert.match(html, /scale_add/);
      assert.equal((html.match(/class="pt estimated/g) ?? []).length, parsed.kernels);
      assert.equal((html.match(/class="ceiling"/g) ?? []).length, 4);
      // the page links each kernel to its file, for the click that opens it
      assert.ok(html.includes(JSON.stringify(fixture).slice(1, -1)), 'the kernel\'s path is in the page');
    }
  });

  test('a changed GPU setting reaches the server without a restart', { skip }, async () => {
    const list = parseGpuList(await execute(SERVER_COMMANDS.listGpus, []));
    const current = findGpu(list, String(config.gpu));
    const before = hoverText(await hover());
    // Pick the profile whose fp32 ridge differs most from the current one, so the verdict text must change.
    const other = list
      .filter((g) => g !== current)
      .sort((a, b) => Math.abs((b.ridges.fp32 ?? 0) - (current?.ridges.fp32 ?? 0)) - Math.abs((a.ridges.fp32 ?? 0) - (current?.ridges.fp32 ?? 0)))[0];
    assert.ok(other !== undefined);
    // What the status-bar quick pick does: write roofline.gpu; VS Code then sends didChangeConfiguration.
    config = toServerConfig(settingsGetter(manifest, { ...userSettings, gpu: other.name }), pathCtx);
    await connection.sendNotification(DidChangeConfigurationNotification.type, { settings: { roofline: config } });
    const names = [other.name, ...other.aliases].map((n) => n.toLowerCase());
    const after = await until(`a hover about ${other.name}`, 30_000, async () => {
      const t = hoverText(await hover());
      return t !== before && names.some((n) => t.toLowerCase().includes(n)) ? t : undefined;
    });
    assert.match(after, /bound/i);
    assert.ok(!child.killed && child.exitCode === null, 'the same server process answered');
  });

  test('workspace/configuration requests, if any, asked only for the roofline section', { skip }, () => {
    for (const section of configurationRequests) {
      assert.ok(section === undefined || section === 'roofline' || section.startsWith('roofline.'), String(section));
    }
  });
});

/** The interpreter that runs the roofline-lsp script (its shebang), else python3. */
function pythonFor(exe: string): string {
  try {
    const first = fs.readFileSync(exe, 'utf8').split('\n', 1)[0];
    const m = /^#!\s*(\S*python[0-9.]*)\s*$/.exec(first);
    if (m !== null && isExecutable(m[1])) {
      return m[1];
    }
  } catch {
    // a binary launcher
  }
  return process.platform === 'win32' ? 'python' : 'python3';
}

describe('roofline.server.pythonPath', () => {
  test('runs <python> -m roofline_lsp serve, which answers initialize', { skip, timeout: 60_000 }, async () => {
    assert.equal(missing, undefined, missing);
    const python = pythonFor(resolved as string);
    const cmd = serverCommand({ path: '', pythonPath: python }, pathCtx);
    assert.deepEqual(cmd.args, ['-m', 'roofline_lsp', 'serve']);
    const exe = findExecutable(cmd.command, { env: process.env, cwd: fixtures, isExecutable });
    assert.ok(exe !== undefined, `${python} not found`);
    const proc = cp.spawn(exe, [...cmd.args], { cwd: fixtures, env: serverEnv(process.env, 'OPENAI_API_KEY', undefined).env });
    const err = new LineTail(20);
    proc.stderr.on('data', (d: Buffer) => err.push(d.toString('utf8')));
    const conn = createProtocolConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));
    conn.listen();
    try {
      const exited = new Promise<never>((_, reject) =>
        proc.once('exit', (code) => reject(new Error(`exited with ${code}: ${err.get().join('\n')}`))),
      );
      exited.catch(() => undefined);
      const result = await Promise.race([
        conn.sendRequest(InitializeRequest.type, {
          processId: process.pid,
          rootUri: pathToFileURL(fixtures).href,
          capabilities: {},
          initializationOptions: toServerConfig(get, pathCtx),
        }),
        exited,
      ]);
      assert.ok(result.capabilities.hoverProvider, 'the server provides hovers');
      await Promise.race([conn.sendRequest(ShutdownRequest.type), exited]);
      await conn.sendNotification(ExitNotification.type);
      const code = await new Promise((r) => (proc.exitCode !== null ? r(proc.exitCode) : proc.once('exit', r)));
      assert.equal(code, 0);
    } finally {
      conn.dispose();
      if (proc.exitCode === null) {
        proc.kill();
      }
    }
  });
});

describe("the contributed defaults are the server's defaults", () => {
  test('toServerConfig of the untouched settings equals model/config.py Config() in camelCase', { skip }, () => {
    const script = `
import dataclasses, json
from roofline_lsp.model import config as c
def camel(n):
    head, *rest = n.split("_")
    return head + "".join(w.title() for w in rest)
def conv(o):
    if dataclasses.is_dataclass(o):
        return {camel(f.name): conv(getattr(o, f.name)) for f in dataclasses.fields(o)}
    if isinstance(o, (list, tuple)):
        return [conv(x) for x in o]
    if isinstance(o, dict):
        return {k: conv(v) for k, v in o.items()}
    return o
print(json.dumps({"defaults": conv(c.Config()), "backends": list(c.BACKENDS),
                  "modes": list(c.MODES), "counts": list(c.COUNTS_MODES)}))
`;
    assert.equal(missing, undefined, missing);
    const python = pythonFor(resolved as string);
    const run = cp.spawnSync(python, ['-c', script], { encoding: 'utf8' });
    assert.equal(run.status, 0, `${python} could not import roofline_lsp.model.config: ${run.stderr}`);
    const server = JSON.parse(run.stdout) as { defaults: ServerConfig; backends: string[]; modes: string[]; counts: string[] };
    assert.deepEqual(toServerConfig(settingsGetter(manifest), pathCtx), server.defaults);
    const props = manifest.contributes.configuration.properties;
    assert.deepEqual(props['roofline.backend'].enum, server.backends);
    assert.deepEqual(props['roofline.llm.mode'].enum, server.modes);
    assert.deepEqual(props['roofline.counts'].enum, server.counts);
  });
});
