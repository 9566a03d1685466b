/**
 * The opaque values a provider gives with its answer for the client to send back (Gemini's thought
 * signatures, Claude's thinking signatures, OpenAI's encrypted reasoning), as the stand-in makes
 * them: a hash of what the value vouches for and the model that made it, so that the stand-in can
 * tell, as the real APIs do, a value given back unchanged to its model from a missing, altered or
 * foreign one, without keeping anything.
 */
import { createHash } from 'node:crypto';

/** The value `provider`'s `model` gives for `content`. */
export function signature(provider: string, model: string, content: string): string {
  const digest = createHash('sha256').update(`${provider}\u0000${model}\u0000${content}`).digest('base64');
  return `scripted-${provider}-${digest}`;
}

/** Whether `value` is the one `provider`'s `model` gives for `content`. */
export function signedBy(value: string, provider: string, model: string, content: string): boolean {
  return value === signature(provider, model, content);
}
