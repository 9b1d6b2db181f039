// Activates the bundled extension (out/extension.js, as packaged) against a stand-in `vscode`
// module and checks the behaviour a user sees when the server cannot start, and the API-key flow.

import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { API_KEY_SECRET, CLIENT_COMMANDS } from '../../src/commands';
import { clientRoot, readManifest } from '../manifest';
import { FakeVscode, loadWithVscode } from './fakeVscode';

describe('the packaged extension', () => {
  const vscode = new FakeVscode();
  let ext: Record<string, unknown>;
  const missing = path.join(clientRoot(), 'test', 'fixtures', 'no-such-roofline-lsp');

  before(() => {
    vscode.settings = { 'server.path': missing, gpu: 'a100', 'llm.apiKeyEnv': 'MY_LLM_KEY' };
    vscode.activeDocument = {
      uri: { toString: () => 'file:///w/k.cu', scheme: 'file', fsPath: '/w/k.cu', path: '/w/k.cu' },
      languageId: 'cuda-cpp',
    };
    ext = loadWithVscode(path.join(clientRoot(), 'out', 'extension.js'), vscode);
    (ext.activate as (c: unknown) => void)(vscode.context());
  });

  after(async () => {
    await (ext.deactivate as () => Promise<void>)();
  });

  test('registers every contributed command', () => {
    for (const { command } of readManifest().contributes.commands) {
      assert.ok(vscode.commands.has(command), command);
    }
  });

  test('a server that cannot start gets a notification saying why, with "Show logs"', async () => {
    const n = await vscode.notification(/Roofline server could not start/);
    assert.equal(n.level, 'error');
    assert.ok(n.text.includes(`"${missing}" was not found (from roofline.server.path)`), n.text);
    assert.deepEqual(n.buttons.slice(0, 1), ['Show logs']);
    assert.equal(vscode.notifications.filter((x) => x.level === 'error').length, 1, 'one notification, not the library\'s too');
    const shown = vscode.outputShown;
    n.answer('Show logs');
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(vscode.outputShown, shown + 1);
    assert.match(vscode.output.join(''), /could not start/);
  });

  test('the status bar shows the target GPU, flagged while the server is down', () => {
    assert.equal(vscode.status.visible, true);
    assert.equal(vscode.status.text, '$(warning) a100');
    assert.equal(vscode.status.command, CLIENT_COMMANDS.selectGpu);
  });

  test('the API key goes to secret storage, never to settings, and restarts the server', async () => {
    const before = vscode.notifications.length;
    vscode.inputBoxAnswer = '  sk-test-secret-123  ';
    await vscode.commands.get(CLIENT_COMMANDS.setApiKey)?.();
    assert.equal(vscode.inputBoxOptions?.password, true);
    assert.match(String(vscode.inputBoxOptions?.prompt), /\$MY_LLM_KEY/);
    assert.equal(vscode.secrets.get(API_KEY_SECRET), 'sk-test-secret-123');
    assert.deepEqual(vscode.updates, [], 'no setting was written');
    // The secret change restarts the server, which fails again (still not installed) and says so.
    const deadline = Date.now() + 5000;
    while (vscode.notifications.slice(before).filter((n) => /could not start/.test(n.text)).length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(vscode.notifications.slice(before).some((n) => /could not start/.test(n.text)), 'restarted');
    const everything = [...vscode.output, ...vscode.notifications.map((n) => n.text)].join('\n');
    assert.ok(!everything.includes('sk-test-secret'), 'the key is never logged or shown');
  });

  test('clearing the key removes it', async () => {
    await vscode.commands.get(CLIENT_COMMANDS.clearApiKey)?.();
    assert.equal(vscode.secrets.has(API_KEY_SECRET), false);
  });

  test('Show chart asks workspace or file, and needs the server', async () => {
    const before = vscode.notifications.length;
    await vscode.commands.get(CLIENT_COMMANDS.showChart)?.(); // the question dismissed: nothing
    assert.equal(vscode.notifications.length, before);
    await vscode.commands.get(CLIENT_COMMANDS.showChart)?.('workspace');
    assert.ok(vscode.notifications.slice(before).some((x) => /not running/.test(x.text)));
  });

  test('commands that need the server say it is not running', async () => {
    const before = vscode.notifications.length;
    await vscode.commands.get(CLIENT_COMMANDS.selectGpu)?.();
    const n = vscode.notifications.slice(before).find((x) => /not running/.test(x.text));
    assert.ok(n !== undefined);
    assert.ok(n.buttons.includes('Show logs') && n.buttons.includes('Restart'));
  });
});
