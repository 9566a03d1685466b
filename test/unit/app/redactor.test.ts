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

describe('the redactor: every key it is told of', () => {
  const none = { get: async (): Promise<string | undefined> => undefined };

  it('knows a key as soon as it is read or set, whatever its shape, and forgets it when deleted', () => {
    const r = new Redactor(() => [{ name: 'local' }], none);
    const key = 'x.(y)*[z]+0042';
    r.stored('local', key);
    assert.equal(r.redact(`rejected ${key}`), `rejected ${REDACTED}`);
    assert.ok(r.secrets.found(`"${JSON.stringify(key).slice(1, -1)}"`), 'the store finds it in a line');
    r.deleted('local');
    assert.equal(r.redact(`rejected ${key}`), `rejected ${key}`);
    assert.equal(r.secrets.found(key), false);
  });

  it('knows the keys the environment hands over, and no other variable', () => {
    const r = new Redactor(() => [], none);
    r.fromEnvironment({ LONGRUN_API_KEY: 'from-npm-start-0042', ANTHROPIC_API_KEY: 'shell-anthropic-0077', HOME: '/home/someone-long' });
    assert.equal(r.redact('from-npm-start-0042 shell-anthropic-0077 /home/someone-long'), `${REDACTED} ${REDACTED} /home/someone-long`);
  });

  it('forgets a key no longer stored when read again, and keeps one that could not be read', async () => {
    const stored: Record<string, string | undefined | Error> = { a: 'first-secret-0042', b: 'second-secret-0077' };
    const keys = {
      get: async (name: string): Promise<string | undefined> => {
        const key = stored[name];
        if (key instanceof Error) throw key;
        return key;
      },
    };
    const r = new Redactor(() => [{ name: 'a' }, { name: 'b' }], keys);
    await r.refresh();
    stored.a = undefined;
    stored.b = new Error('locked');
    await r.refresh();
    assert.equal(r.redact('first-secret-0042 second-secret-0077'), `first-secret-0042 ${REDACTED}`);
  });
});
