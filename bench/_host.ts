import { loadTokenizer } from '../src/core/tokenizer';
import { benchEngineHost } from './engine-host';
void (async () => {
  const t = await loadTokenizer('o200k_base');
  for (let i = 0; i < 3; i++) console.log(JSON.stringify(await benchEngineHost(t)));
})();
