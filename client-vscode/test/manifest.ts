// Test helpers: the extension's package.json, and a settings getter that behaves like
// vscode.workspace.getConfiguration('roofline').get (a set value, else the manifest default).

import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SettingGetter } from '../src/settings';

export interface SettingSchema {
  type?: string | string[];
  default?: unknown;
  enum?: unknown[];
  enumDescriptions?: string[];
  description?: string;
  markdownDescription?: string;
  minimum?: number;
  maximum?: number;
  scope?: string;
}

export interface Manifest {
  name: string;
  publisher: string;
  main: string;
  license?: string;
  engines: { vscode: string };
  activationEvents: string[];
  scripts: Record<string, string>;
  contributes: {
    commands: { command: string; title: string; category?: string }[];
    configuration: { properties: Record<string, SettingSchema> };
  };
  capabilities?: { untrustedWorkspaces?: { restrictedConfigurations?: string[] } };
}

/** The client-vscode folder (tests run from out/tsc/test/...). */
export function clientRoot(): string {
  let dir = __dirname;
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && JSON.parse(fs.readFileSync(manifest, 'utf8')).name === 'roofline-lsp') {
      return dir;
    }
    const up = path.dirname(dir);
    if (up === dir) {
      throw new Error('client-vscode/package.json not found above ' + __dirname);
    }
    dir = up;
  }
}

export function readManifest(): Manifest {
  return JSON.parse(fs.readFileSync(path.join(clientRoot(), 'package.json'), 'utf8')) as Manifest;
}

/** getConfiguration('roofline').get(key): `values[key]` if given, else the contributed default. */
export function settingsGetter(manifest: Manifest, values: Record<string, unknown> = {}): SettingGetter {
  const props = manifest.contributes.configuration.properties;
  return (key: string) => {
    if (key in values) {
      return values[key];
    }
    const schema = props[`roofline.${key}`];
    return schema === undefined ? undefined : structuredClone(schema.default);
  };
}
