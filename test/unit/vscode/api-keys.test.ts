import assert from 'node:assert/strict';
import type * as vscode from 'vscode';
import { Redactor } from '../../../src/app/report/redactor';
import { REDACTED } from '../../../src/core/redact';
import { ApiKeys } from '../../../src/vscode/api-keys';

/** Secret storage in memory, as VS Code's behaves for one extension. */
function memorySecrets(): vscode.SecretStorage {
  const values = new Map<string, string>();
  return {
    get: async (key: string) => values.get(key),
    store: async (key: string, value: string) => void values.set(key, value),
    delete: async (key: string) => void values.delete(key),
    keys: async () => [...values.keys()],
    onDidChange: () => ({ dispose: () => undefined }),
  } as unknown as vscode.SecretStorage;
}

describe('API keys in secret storage', () => {
  it('tells the redactor of each key as it is set or read, and when it is deleted', async () => {
    const secrets = memorySecrets();
    const redactor = new Redactor(() => [], { get: async () => undefined });
    const keys = new ApiKeys(secrets, redactor);
    await keys.set('local', 'set-key-of-no-shape-1');
    assert.equal(redactor.redact('set-key-of-no-shape-1'), REDACTED, 'known once set');

    // Stored by an earlier session: known once read.
    await secrets.store('longrun.endpoint.other.apiKey', 'read-key-of-no-shape-2');
    assert.equal(redactor.redact('read-key-of-no-shape-2'), 'read-key-of-no-shape-2');
    assert.equal(await keys.get('other'), 'read-key-of-no-shape-2');
    assert.equal(redactor.redact('read-key-of-no-shape-2'), REDACTED, 'known once read');

    await keys.delete('local');
    assert.equal(redactor.redact('set-key-of-no-shape-1'), 'set-key-of-no-shape-1', 'forgotten once deleted');
    assert.equal(redactor.redact('read-key-of-no-shape-2'), REDACTED, "the other endpoint's is kept");
  });
});
