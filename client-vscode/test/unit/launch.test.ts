import assert from 'node:assert/strict';
import * as cp from 'node:child_process';
import { describe, test } from 'node:test';
import {
  CrashTracker,
  LineTail,
  describeStartFailure,
  findExecutable,
  lastStderrLine,
  serverCommand,
  serverEnv,
} from '../../src/launch';

const ctx = { workspaceFolder: '/ws', home: '/home/u', platform: 'linux' as const };

describe('serverCommand', () => {
  test('default is roofline-lsp serve on PATH', () => {
    assert.deepEqual(serverCommand({ path: '', pythonPath: '' }, ctx), {
      command: 'roofline-lsp',
      args: ['serve'],
      source: 'default',
    });
  });
  test('pythonPath runs the module', () => {
    const c = serverCommand({ path: '', pythonPath: '~/venv/bin/python' }, ctx);
    assert.equal(c.command, '/home/u/venv/bin/python');
    assert.deepEqual(c.args, ['-m', 'roofline_lsp', 'serve']);
    assert.equal(c.source, 'roofline.server.pythonPath');
  });
  test('server.path wins over pythonPath', () => {
    const c = serverCommand({ path: '${workspaceFolder}/bin/roofline-lsp', pythonPath: 'python3' }, ctx);
    assert.equal(c.command, '/ws/bin/roofline-lsp');
    assert.deepEqual(c.args, ['serve']);
    assert.equal(c.source, 'roofline.server.path');
  });
  test('non-string settings fall back to the default', () => {
    assert.equal(serverCommand({ path: 3, pythonPath: null }, ctx).command, 'roofline-lsp');
  });
});

describe('findExecutable', () => {
  const files = new Set(['/usr/local/bin/roofline-lsp', '/ws/venv/bin/python', 'C:\\Py\\Scripts\\roofline-lsp.exe']);
  const isExecutable = (f: string) => files.has(f);
  test('searches PATH in order', () => {
    const env = { PATH: '/nope:/usr/local/bin:/usr/bin' };
    assert.equal(findExecutable('roofline-lsp', { env, platform: 'linux', isExecutable }), '/usr/local/bin/roofline-lsp');
    assert.equal(findExecutable('other', { env, platform: 'linux', isExecutable }), undefined);
    assert.equal(findExecutable('roofline-lsp', { env: {}, platform: 'linux', isExecutable }), undefined);
  });
  test('a path with a separator is checked directly, relative to cwd', () => {
    const opts = { env: { PATH: '/usr/local/bin' }, platform: 'linux' as const, cwd: '/ws', isExecutable };
    assert.equal(findExecutable('venv/bin/python', opts), '/ws/venv/bin/python');
    assert.equal(findExecutable('/ws/venv/bin/python', opts), '/ws/venv/bin/python');
    assert.equal(findExecutable('/ws/venv/bin/python3', opts), undefined);
  });
  test('Windows: Path in any case and PATHEXT', () => {
    const env = { Path: 'C:\\Windows;C:\\Py\\Scripts', PATHEXT: '.COM;.EXE' };
    assert.equal(findExecutable('roofline-lsp', { env, platform: 'win32', isExecutable }), 'C:\\Py\\Scripts\\roofline-lsp.exe');
  });
});

describe('serverEnv', () => {
  const base = { PATH: '/bin', HOME: '/home/u', OPENAI_API_KEY: 'from-shell', DROPPED: undefined };
  test('the stored key is passed under the configured variable', () => {
    const { env, warning } = serverEnv(base, 'MY_KEY', 'sk-stored');
    assert.equal(env.MY_KEY, 'sk-stored');
    assert.equal(env.OPENAI_API_KEY, 'from-shell');
    assert.equal(env.PATH, '/bin');
    assert.ok(!('DROPPED' in env));
    assert.equal(warning, undefined);
  });
  test('the stored key replaces an inherited one', () => {
    assert.equal(serverEnv(base, 'OPENAI_API_KEY', 'sk-stored').env.OPENAI_API_KEY, 'sk-stored');
  });
  test('without a stored key the inherited variable is kept', () => {
    assert.equal(serverEnv(base, 'OPENAI_API_KEY', undefined).env.OPENAI_API_KEY, 'from-shell');
  });
  test('a bad variable name is refused with a warning that does not contain the key', () => {
    const { env, warning } = serverEnv(base, 'BAD NAME=', 'sk-secret-value');
    assert.ok(!Object.values(env).includes('sk-secret-value'));
    assert.match(warning ?? '', /apiKeyEnv/);
    assert.ok(!(warning ?? '').includes('sk-secret-value'));
  });
  test('the base environment is not modified', () => {
    const mine = { A: '1' };
    serverEnv(mine, 'KEY', 'v');
    assert.deepEqual(mine, { A: '1' });
  });
});

describe('describeStartFailure', () => {
  const def = serverCommand({}, ctx);
  test('not found on PATH says how to install or configure', () => {
    const m = describeStartFailure({ command: def, notFound: true });
    assert.match(m, /"roofline-lsp" was not found on PATH/);
    assert.match(m, /pip install roofline-lsp/);
    assert.match(m, /roofline\.server\.path/);
  });
  test('a configured path that does not exist names its setting', () => {
    const m = describeStartFailure({ command: serverCommand({ path: '/opt/x' }, ctx), spawnError: { code: 'ENOENT', message: 'spawn /opt/x ENOENT' } });
    assert.match(m, /"\/opt\/x" was not found \(from roofline\.server\.path\)/);
  });
  test('an interpreter without the package', () => {
    const m = describeStartFailure({
      command: serverCommand({ pythonPath: '/usr/bin/python3' }, ctx),
      exitCode: 1,
      stderr: ['/usr/bin/python3: No module named roofline_lsp', ''],
    });
    assert.match(m, /does not have the roofline-lsp package/);
    assert.match(m, /\/usr\/bin\/python3 -m pip install roofline-lsp/);
  });
  test('an early exit quotes the last stderr line and is one line', () => {
    const m = describeStartFailure({
      command: def,
      exitCode: 2,
      stderr: ['Traceback (most recent call last):', '  File "x.py", line 1', 'ValueError: bad things'],
    });
    assert.match(m, /"roofline-lsp serve" exited with code 2: ValueError: bad things\.$/);
    assert.ok(!m.includes('\n'));
  });
  test('a real spawn of a missing program is explained', async () => {
    const child = cp.spawn('/nonexistent/roofline-lsp-test', ['serve']);
    const err = await new Promise<NodeJS.ErrnoException>((resolve) => child.on('error', resolve));
    assert.equal(child.pid, undefined);
    const m = describeStartFailure({
      command: serverCommand({ path: '/nonexistent/roofline-lsp-test' }, ctx),
      spawnError: { code: err.code, message: err.message },
    });
    assert.match(m, /was not found \(from roofline\.server\.path\)/);
  });
});

describe('CrashTracker and LineTail', () => {
  test('restarts up to four times within the window, then stops', () => {
    const t = new CrashTracker(5, 1000);
    assert.deepEqual([0, 10, 20, 30].map((n) => t.record(n)), [true, true, true, true]);
    assert.equal(t.record(40), false);
  });
  test('old crashes leave the window', () => {
    const t = new CrashTracker(2, 1000);
    assert.equal(t.record(0), true);
    assert.equal(t.record(5000), true);
    assert.equal(t.record(5001), false);
    t.reset();
    assert.equal(t.record(5002), true);
  });
  test('LineTail keeps the last lines across chunk boundaries', () => {
    const tail = new LineTail(3);
    tail.push('one\ntw');
    tail.push('o\r\nthree\nfour\nfi');
    assert.deepEqual(tail.get(), ['three', 'four', 'fi']);
    assert.equal(lastStderrLine(['a', 'b', '  ', '']), 'b');
    assert.equal(lastStderrLine([]), undefined);
  });
});
