import assert from 'node:assert/strict';
import { Redactor } from '../../../src/app/report/redactor';
import { REDACTED } from '../../../src/core/redact';

/** Provider text cleaned of the API keys stored for the configured endpoints. */

// Keys of no provider's shape: only the stored list can recognise them.
const LOCAL_KEY = 'local-secret-0042';
const OTHER_KEY = 'another-secret-0077';

describe('the redactor', () => {
  function redactor(stored: Record<string, string | Error>, endpoints = Object.keys(stored)) {
    const asked: string[] = [];
    const keys = {
      get: async (name: string): Promise<string | undefined> => {
        asked.push(name);
        const key = stored[name];
        if (key instanceof Error) throw key;
        return key;
      },
    };
    return { redactor: new Redactor(() => endpoints.map((name) => ({ name })), keys), asked };
  }

  it('removes shapes of keys before any stored key is read', () => {
    const { redactor: r, asked } = redactor({ local: LOCAL_KEY });
    assert.equal(r.redact('Authorization: Bearer abc123def456ghi789'), `Authorization: Bearer ${REDACTED}`);
    assert.equal(r.redact(`bad key ${LOCAL_KEY}`), `bad key ${LOCAL_KEY}`, 'the stored key is not known yet');
    assert.deepEqual(asked, []);
  });

  it('removes the stored key of every configured endpoint once they are read', async () => {
    const { redactor: r } = redactor({ local: LOCAL_KEY, other: OTHER_KEY });
    await r.refresh();
    assert.equal(r.redact(`401: key ${LOCAL_KEY} rejected, ${OTHER_KEY} too`), `401: key ${REDACTED} rejected, ${REDACTED} too`);
  });

  it('skips a key that cannot be read, and keeps the others', async () => {
    const { redactor: r } = redactor({ broken: new Error('secret storage is locked'), local: LOCAL_KEY });
    await r.refresh();
    assert.equal(r.redact(`key ${LOCAL_KEY}`), `key ${REDACTED}`);
  });

  it('forgets the key of an endpoint removed from the settings when read again', async () => {
    const endpoints = ['local'];
    const { redactor: r } = redactor({ local: LOCAL_KEY }, endpoints);
    await r.refresh();
    endpoints.length = 0;
    await r.refresh();
    assert.equal(r.redact(`key ${LOCAL_KEY}`), `key ${LOCAL_KEY}`);
  });
});
