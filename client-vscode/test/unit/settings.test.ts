import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  SERVER_SETTINGS,
  configurationSection,
  expandCommand,
  expandPath,
  needsRestart,
  gpuTargetChoices,
  settingTarget,
  showInlayHints,
  toServerConfig,
} from '../../src/settings';
import { readManifest, settingsGetter } from '../manifest';

const ctx = { workspaceFolder: '/ws/proj', home: '/home/u', platform: 'linux' as const };

describe('toServerConfig', () => {
  test('defaults translate to the nested camelCase object with unset paths as null', () => {
    const cfg = toServerConfig(settingsGetter(readManifest()), ctx);
    assert.equal(cfg.gpu, 'h100');
    assert.deepEqual(cfg.compareGpus, []);
    assert.equal(cfg.backend, 'static');
    assert.equal(cfg.counts, 'auto');
    assert.equal(cfg.profile, null);
    assert.equal(cfg.nvcc, null);
    assert.equal(cfg.args, null);
    const llm = cfg.llm as Record<string, unknown>;
    assert.equal(llm.baseUrl, 'https://api.openai.com/v1');
    assert.equal(llm.apiKeyEnv, 'OPENAI_API_KEY');
    assert.equal(llm.reasoningEffort, null);
    assert.equal(llm.temperature, 0.1);
    assert.equal(llm.cacheDir, null);
    assert.ok(!('server' in cfg), 'client-only settings are not sent');
    assert.ok(!('trace' in cfg));
  });

  test('every server setting is sent, so clearing one clears it on the server', () => {
    const cfg = toServerConfig(settingsGetter(readManifest()), ctx);
    for (const { key } of SERVER_SETTINGS) {
      const [head, tail] = key.split('.');
      const value = tail === undefined ? cfg[head] : (cfg[head] as Record<string, unknown>)[tail];
      assert.notEqual(value, undefined, key);
    }
  });

  test('user values are normalised: trimmed, empty list entries dropped, paths resolved', () => {
    const get = settingsGetter(readManifest(), {
      gpu: '  mi300x ',
      compareGpus: [' a100', '', 'l40s '],
      profile: 'prof/ncu.csv',
      gpuProfiles: '${workspaceFolder}/gpus.toml',
      'llm.dataset': '~/data/labels',
      'llm.cacheDir': '/abs/cache',
      'llm.reasoningEffort': 'high',
      'llm.temperature': null,
      'llm.headers': { 'X-Team': 'hpc' },
      nvcc: 'nvcc',
      args: '  ',
      overrides: [{ files: '*.hip', gpu: 'mi300x' }],
    });
    const cfg = toServerConfig(get, ctx);
    assert.equal(cfg.gpu, 'mi300x');
    assert.deepEqual(cfg.compareGpus, ['a100', 'l40s']);
    assert.equal(cfg.profile, '/ws/proj/prof/ncu.csv');
    assert.equal(cfg.gpuProfiles, '/ws/proj/gpus.toml');
    assert.equal(cfg.nvcc, 'nvcc', 'a bare command stays a PATH lookup');
    assert.equal(cfg.args, null);
    assert.deepEqual(cfg.overrides, [{ files: '*.hip', gpu: 'mi300x' }]);
    const llm = cfg.llm as Record<string, unknown>;
    assert.equal(llm.dataset, '/home/u/data/labels');
    assert.equal(llm.cacheDir, '/abs/cache');
    assert.equal(llm.reasoningEffort, 'high');
    assert.equal(llm.temperature, null);
    assert.deepEqual(llm.headers, { 'X-Team': 'hpc' });
  });

  test('values of the wrong type pass through for the server to report', () => {
    const cfg = toServerConfig(settingsGetter(readManifest(), { debounceMs: 'soon', backend: 42 }), ctx);
    assert.equal(cfg.debounceMs, 'soon');
    assert.equal(cfg.backend, 42);
  });

  test('unknown settings (getter returns undefined) are left to the server default', () => {
    const cfg = toServerConfig((key) => (key === 'gpu' ? 'a100' : undefined), ctx);
    assert.deepEqual(cfg, { gpu: 'a100' });
  });
});

describe('paths', () => {
  test('expandPath', () => {
    assert.equal(expandPath('', ctx), undefined);
    assert.equal(expandPath('   ', ctx), undefined);
    assert.equal(expandPath('a.csv', ctx), '/ws/proj/a.csv');
    assert.equal(expandPath('../b.csv', ctx), '/ws/b.csv');
    assert.equal(expandPath('~', ctx), '/home/u');
    assert.equal(expandPath('${userHome}/x', ctx), '/home/u/x');
    assert.equal(expandPath('rel', { home: '/h' }), 'rel', 'no folder open: left relative');
    assert.equal(
      expandPath('sub\\f.csv', { workspaceFolder: 'C:\\ws', platform: 'win32' }),
      'C:\\ws\\sub\\f.csv',
    );
  });

  test('expandCommand keeps bare names and resolves relative paths', () => {
    assert.equal(expandCommand('roofline-lsp', ctx), 'roofline-lsp');
    assert.equal(expandCommand('./venv/bin/roofline-lsp', ctx), '/ws/proj/venv/bin/roofline-lsp');
    assert.equal(expandCommand('~/.local/bin/roofline-lsp', ctx), '/home/u/.local/bin/roofline-lsp');
  });
});

describe('configurationSection', () => {
  const cfg = toServerConfig(settingsGetter(readManifest(), { gpu: 'a100' }), ctx);
  test('answers the roofline section and its sub-sections', () => {
    assert.deepEqual(configurationSection(cfg, 'roofline'), cfg);
    assert.equal(configurationSection(cfg, 'roofline.gpu'), 'a100');
    assert.equal(configurationSection(cfg, 'roofline.llm.model'), 'gpt-4o-mini');
    assert.equal(configurationSection(cfg, 'roofline.nope'), null);
    assert.deepEqual(configurationSection(cfg, undefined), { roofline: cfg });
  });
  test('leaves other sections to VS Code', () => {
    assert.equal(configurationSection(cfg, 'editor'), undefined);
    assert.equal(configurationSection(cfg, 'rooflinex'), undefined);
  });
});

describe('restart and targets', () => {
  test('only launch settings and the key variable need a new process', () => {
    const affects = (changed: string[]) => (s: string) => changed.some((c) => c === s || c.startsWith(s + '.'));
    assert.equal(needsRestart(affects(['roofline.server.path'])), true);
    assert.equal(needsRestart(affects(['roofline.server.pythonPath'])), true);
    assert.equal(needsRestart(affects(['roofline.llm.apiKeyEnv'])), true);
    assert.equal(needsRestart(affects(['roofline.gpu', 'roofline.llm.model'])), false);
  });

  test('a new GPU goes where the setting is already set, else to user settings', () => {
    assert.equal(settingTarget(undefined), 'global');
    assert.equal(settingTarget({ globalValue: 'a100' }), 'global');
    assert.equal(settingTarget({ globalValue: 'a100', workspaceValue: 'h100' }), 'workspace');
    assert.equal(settingTarget({ workspaceValue: 'h100', workspaceFolderValue: 'l4' }), 'workspaceFolder');
  });
});

describe('gpuTargetChoices', () => {
  test('with no folder open nobody is asked: the user settings', () => {
    assert.deepEqual(gpuTargetChoices({ globalValue: 'a100' }, false), []);
  });

  test('with a folder open the workspace comes first, the user settings second', () => {
    const [here, everywhere] = gpuTargetChoices({ globalValue: 'a100' }, true);
    assert.equal(here.target, 'workspace');
    assert.deepEqual(here.clear, []);
    assert.equal(everywhere.target, 'global');
    assert.deepEqual(everywhere.clear, []);
  });

  test('the user settings remove the workspace values that would hide them', () => {
    const [here, everywhere] = gpuTargetChoices({ workspaceValue: 'h100', workspaceFolderValue: 'l4' }, true);
    assert.equal(here.target, 'workspaceFolder');
    assert.deepEqual(everywhere.clear, ['workspace', 'workspaceFolder']);
    assert.match(everywhere.description, /removes/);
  });
});

describe('showInlayHints', () => {
  test('auto: only where code lenses are off (the lens already gives the verdict)', () => {
    assert.equal(showInlayHints('auto', true), false);
    assert.equal(showInlayHints('auto', undefined), false);
    assert.equal(showInlayHints('auto', false), true);
    assert.equal(showInlayHints(undefined, false), true);
  });

  test('on and off whatever the lenses', () => {
    assert.equal(showInlayHints('on', true), true);
    assert.equal(showInlayHints('off', false), false);
  });
});
