// The manifest (package.json) contributes exactly the settings the client translates, with
// descriptions and enums, and commands that cannot collide with the server's.

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { CLIENT_COMMANDS, FILE_PATTERNS, LANGUAGES, SERVER_COMMANDS, documentSelector, reportPath } from '../../src/commands';
import { CLIENT_SETTINGS, RESTART_SETTINGS, SERVER_SETTINGS } from '../../src/settings';
import { clientRoot, readManifest } from '../manifest';

const manifest = readManifest();
const props = manifest.contributes.configuration.properties;

describe('contributed settings', () => {
  test('one setting per server key plus the client-only ones, nothing else', () => {
    const expected = [...SERVER_SETTINGS.map((s) => s.key), ...CLIENT_SETTINGS].map((k) => `roofline.${k}`).sort();
    assert.deepEqual(Object.keys(props).sort(), expected);
  });
  test('each has a description, a default, and enum descriptions matching its enum', () => {
    for (const [key, schema] of Object.entries(props)) {
      assert.ok((schema.description ?? schema.markdownDescription ?? '').length > 20, `${key} description`);
      assert.ok('default' in schema, `${key} default`);
      if (schema.enum !== undefined) {
        assert.ok(schema.enum.includes(schema.default), `${key} default is in its enum`);
        if (schema.enumDescriptions !== undefined) {
          assert.equal(schema.enumDescriptions.length, schema.enum.length, `${key} enumDescriptions`);
        }
      }
    }
  });
  test('the enumerated settings have their enums', () => {
    assert.deepEqual(props['roofline.backend'].enum, ['static', 'llm', 'auto']);
    assert.deepEqual(props['roofline.counts'].enum, ['source', 'compiler', 'auto']);
    assert.deepEqual(props['roofline.buildCompiler'].enum, ['nvcc', 'clang']);
    assert.deepEqual(props['roofline.llm.mode'].enum, ['zero-shot', 'few-shot', 'hinted']);
    assert.deepEqual(props['roofline.trace.server'].enum, ['off', 'messages', 'verbose']);
  });
  test('no setting holds the API key', () => {
    assert.ok(!Object.keys(props).some((k) => /(^|\.)(apiKey|key|secret|token|password)$/i.test(k)));
  });
  test('settings that run programs or receive the key are restricted in untrusted workspaces', () => {
    const restricted = manifest.capabilities?.untrustedWorkspaces?.restrictedConfigurations ?? [];
    for (const key of ['roofline.server.path', 'roofline.server.pythonPath', 'roofline.nvcc', 'roofline.llm.baseUrl']) {
      assert.ok(restricted.includes(key), key);
      assert.ok(key in props, key);
    }
    for (const key of RESTART_SETTINGS) {
      assert.ok(`roofline.${key}` in props, key);
    }
  });
});

describe('commands and activation', () => {
  test('contributed commands are the client commands, all outside the server namespace', () => {
    const contributed = manifest.contributes.commands.map((c) => c.command).sort();
    assert.deepEqual(contributed, Object.values(CLIENT_COMMANDS).sort());
    const server = new Set<string>(Object.values(SERVER_COMMANDS));
    for (const id of contributed) {
      assert.ok(id.startsWith('roofline.client.'), id);
      assert.ok(!server.has(id), id);
    }
    const setKey = manifest.contributes.commands.find((c) => c.command === CLIENT_COMMANDS.setApiKey);
    assert.equal(`${setKey?.category}: ${setKey?.title}`, 'Roofline: Set API key');
  });
  test('activates for every language and file pattern the client selects', () => {
    for (const lang of LANGUAGES) {
      assert.ok(manifest.activationEvents.includes(`onLanguage:${lang}`), lang);
    }
    for (const pattern of FILE_PATTERNS) {
      assert.ok(manifest.activationEvents.includes(`workspaceContains:${pattern}`), pattern);
    }
    const selector = documentSelector();
    assert.ok(selector.some((f) => 'language' in f && f.language === 'cuda-cpp' && f.scheme === 'untitled'));
    assert.ok(selector.some((f) => 'pattern' in f && f.pattern === '**/*.hip'));
  });
  test('packaging is non-interactive and ships the bundle', () => {
    assert.equal(manifest.main, './out/extension.js');
    assert.equal(manifest.license, 'MIT');
    assert.match(manifest.scripts.package, /^vsce package /);
    assert.match(manifest.scripts['vscode:prepublish'], /bundle/);
    assert.ok(fs.existsSync(path.join(clientRoot(), 'LICENSE')));
    assert.ok(fs.existsSync(path.join(clientRoot(), 'README.md')));
    const engine = manifest.engines.vscode.replace(/^\^/, '');
    const lock = JSON.parse(fs.readFileSync(path.join(clientRoot(), 'package-lock.json'), 'utf8'));
    const types = lock.packages['node_modules/@types/vscode'].version as string;
    assert.equal(types, engine, '@types/vscode must not be newer than engines.vscode');
  });
  test('report documents are named after the file', () => {
    assert.equal(reportPath('file:///w/src/my%20kernel.cu'), '/Roofline report - my kernel.cu.md');
    assert.equal(reportPath('file:///w/a%2Fb.cu?x#y'), '/Roofline report - a_b.cu.md');
    assert.equal(reportPath('file:///w/bad%ZZ.cu'), '/Roofline report - bad%ZZ.cu.md');
    assert.equal(reportPath('untitled:Untitled-1'), '/Roofline report - Untitled-1.md');
  });
});
