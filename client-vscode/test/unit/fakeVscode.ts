// A small stand-in for the `vscode` module, enough to load the bundled extension
// (out/extension.js, the file the .vsix ships) and drive its activation without VS Code.
// It records what the extension does: commands, notifications, status bar, secrets, output.

import Module from 'node:module';

type Listener<T> = (e: T) => unknown;

export class FakeEventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) {
      l(e);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

export interface Notification {
  readonly level: 'error' | 'warning' | 'info';
  readonly text: string;
  readonly buttons: string[];
  answer(choice: string | undefined): void;
}

export interface FakeDocument {
  uri: { toString(): string; scheme: string; fsPath: string; path?: string };
  languageId: string;
}

export class FakeVscode {
  settings: Record<string, unknown> = {};
  readonly commands = new Map<string, (...args: unknown[]) => unknown>();
  readonly executed: { command: string; args: unknown[] }[] = [];
  readonly notifications: Notification[] = [];
  readonly output: string[] = [];
  outputShown = 0;
  readonly status = { text: '', tooltip: '' as unknown, visible: false, command: '' as unknown };
  readonly secrets = new Map<string, string>();
  readonly secretEvents = new FakeEventEmitter<{ key: string }>();
  readonly configEvents = new FakeEventEmitter<{ affectsConfiguration(s: string): boolean }>();
  readonly updates: { key: string; value: unknown; target: unknown }[] = [];
  inputBoxAnswer: string | undefined;
  inputBoxOptions: Record<string, unknown> | undefined;
  activeDocument: FakeDocument | undefined;
  private waiters: (() => void)[] = [];

  /** Resolves when a notification matching `pattern` has been shown. */
  async notification(pattern: RegExp, ms = 5000): Promise<Notification> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.notifications.find((n) => pattern.test(n.text));
      if (found !== undefined) {
        return found;
      }
      if (Date.now() > deadline) {
        throw new Error(`no notification matching ${pattern}; got: ${JSON.stringify(this.notifications.map((n) => n.text))}`);
      }
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }

  private notify(level: Notification['level'], text: string, buttons: unknown[]): Promise<string | undefined> {
    return new Promise((resolve) => {
      this.notifications.push({ level, text, buttons: buttons.filter((b): b is string => typeof b === 'string'), answer: resolve });
      for (const w of this.waiters.splice(0)) {
        w();
      }
    });
  }

  context() {
    return {
      subscriptions: [] as { dispose(): unknown }[],
      secrets: {
        get: async (k: string) => this.secrets.get(k),
        store: async (k: string, v: string) => {
          this.secrets.set(k, v);
          this.secretEvents.fire({ key: k });
        },
        delete: async (k: string) => {
          this.secrets.delete(k);
          this.secretEvents.fire({ key: k });
        },
        onDidChange: this.secretEvents.event,
      },
    };
  }

  /** The module object `require('vscode')` returns. */
  module(): Record<string, unknown> {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the fake's getters need it
    const self = this;
    const disposable = { dispose: () => undefined };
    const config = () => ({
      get: (key: string, dflt?: unknown) => (key in self.settings ? self.settings[key] : dflt),
      inspect: (key: string) => (key in self.settings ? { key, globalValue: self.settings[key] } : { key }),
      update: async (key: string, value: unknown, target: unknown) => {
        self.updates.push({ key, value, target });
        self.settings[key] = value;
      },
    });
    const known: Record<string, unknown> = {
      version: '1.90.0',
      EventEmitter: FakeEventEmitter,
      StatusBarAlignment: { Left: 1, Right: 2 },
      ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
      ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
      ViewColumn: { Active: -1, Beside: -2, One: 1 },
      Disposable: class {
        static from() {
          return disposable;
        }
        dispose() {}
      },
      Uri: {
        parse: (s: string) => ({ toString: () => s, scheme: s.split(':')[0], fsPath: s.replace(/^file:\/\//, '') }),
        from: (c: { scheme: string; path: string; query?: string }) => ({
          toString: () => `${c.scheme}:${c.path}${c.query ? `?${c.query}` : ''}`,
          scheme: c.scheme,
          fsPath: c.path,
        }),
      },
      window: {
        createOutputChannel: (name: string) => ({
          name,
          append: (s: string) => self.output.push(s),
          appendLine: (s: string) => self.output.push(s + '\n'),
          show: () => (self.outputShown += 1),
          clear: () => undefined,
          hide: () => undefined,
          replace: () => undefined,
          dispose: () => undefined,
        }),
        createStatusBarItem: () => {
          const item = self.status;
          return new Proxy(item, {
            get: (t, p) =>
              p === 'show' ? () => (t.visible = true) : p === 'hide' ? () => (t.visible = false) : p === 'dispose' ? () => undefined : (t as Record<string | symbol, unknown>)[p],
            set: (t, p, v) => {
              (t as Record<string | symbol, unknown>)[p] = v;
              return true;
            },
          });
        },
        showErrorMessage: (text: string, ...b: unknown[]) => self.notify('error', text, b),
        showWarningMessage: (text: string, ...b: unknown[]) => self.notify('warning', text, b),
        showInformationMessage: (text: string, ...b: unknown[]) => self.notify('info', text, b),
        showInputBox: async (options: Record<string, unknown>) => {
          self.inputBoxOptions = options;
          return self.inputBoxAnswer;
        },
        showQuickPick: async () => undefined,
        withProgress: async (_o: unknown, task: () => unknown) => task(),
        onDidChangeActiveTextEditor: () => disposable,
        get activeTextEditor() {
          return self.activeDocument === undefined ? undefined : { document: self.activeDocument };
        },
      },
      workspace: {
        getConfiguration: () => config(),
        onDidChangeConfiguration: self.configEvents.event,
        registerTextDocumentContentProvider: () => disposable,
        getWorkspaceFolder: () => undefined,
        workspaceFolders: undefined,
      },
      commands: {
        registerCommand: (id: string, fn: (...args: unknown[]) => unknown) => {
          if (self.commands.has(id)) {
            throw new Error(`command ${id} registered twice`);
          }
          self.commands.set(id, fn);
          return { dispose: () => self.commands.delete(id) };
        },
        executeCommand: async (command: string, ...args: unknown[]) => {
          self.executed.push({ command, args });
          const fn = self.commands.get(command);
          return fn === undefined ? undefined : fn(...args);
        },
      },
      languages: {
        match: (selector: { language?: string; pattern?: string }[], doc: FakeDocument) =>
          selector.some((f) => f.language === doc.languageId) ? 10 : 0,
      },
    };
    // Anything else the language-client library touches at load time: classes to extend, enums.
    return new Proxy(known, {
      get: (t, p) => {
        if (typeof p !== 'string' || p in t) {
          return t[p as string];
        }
        return /^[A-Z]/.test(p) ? class {} : undefined;
      },
    });
  }
}

/** Loads `file` with `require('vscode')` answered by `fake`. */
export function loadWithVscode(file: string, fake: FakeVscode): Record<string, unknown> {
  const mod = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
  const original = mod._load;
  const api = fake.module();
  mod._load = function (request: string, parent: unknown, isMain: boolean) {
    return request === 'vscode' ? api : original.call(this, request, parent, isMain);
  };
  try {
    const resolved = require.resolve(file);
    delete require.cache[resolved];
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loading the CommonJS bundle on purpose
    return require(resolved) as Record<string, unknown>;
  } finally {
    mod._load = original;
  }
}
