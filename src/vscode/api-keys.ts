import type * as vscode from 'vscode';

/** Told of every key as it is read or stored, and of every key deleted: the redactor, which keeps them out of what is written. */
export interface KeyWatcher {
  stored(endpoint: string, value: string | undefined): void;
  deleted(endpoint: string): void;
}

/**
 * API keys of the configured endpoints, kept only in VS Code's SecretStorage: never in settings,
 * logs, history or summaries.
 */
export class ApiKeys {
  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly watcher?: KeyWatcher,
  ) {}

  private key(endpoint: string): string {
    return `longrun.endpoint.${endpoint}.apiKey`;
  }

  get(endpoint: string): Thenable<string | undefined> {
    return this.secrets.get(this.key(endpoint)).then((value) => {
      this.watcher?.stored(endpoint, value);
      return value;
    });
  }

  set(endpoint: string, value: string): Thenable<void> {
    // Known before it is stored: a request it is sent with may fail before the store resolves.
    this.watcher?.stored(endpoint, value);
    return this.secrets.store(this.key(endpoint), value);
  }

  delete(endpoint: string): Thenable<void> {
    return this.secrets.delete(this.key(endpoint)).then(() => this.watcher?.deleted(endpoint));
  }

  onDidChange(listener: () => void): vscode.Disposable {
    return this.secrets.onDidChange((e) => {
      if (e.key.startsWith('longrun.endpoint.')) listener();
    });
  }
}
