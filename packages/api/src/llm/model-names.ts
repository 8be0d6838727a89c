// How a requested model name finds the model entry that serves it, the same in the config checks, the
// standalone loader and the proxy: an exact name first, then the longest `prefix*`, then `*`; among
// equals, the first in config order.

export class ModelNameMatcher<T> {
  readonly #exact = new Map<string, T>();
  readonly #prefixes: [string, T][] = [];
  #any: T | undefined;
  #frozen = false;

  add(pattern: string, value: T): this {
    if (this.#frozen) throw new Error('ModelNameMatcher: add after freeze');
    if (pattern === '*') this.#any ??= value;
    else if (pattern.endsWith('*')) this.#prefixes.push([pattern.slice(0, -1), value]);
    else if (!this.#exact.has(pattern)) this.#exact.set(pattern, value);
    return this;
  }

  freeze(): this {
    // Longest prefix first; equal lengths keep config order (the sort is stable).
    this.#prefixes.sort((a, b) => b[0].length - a[0].length);
    this.#frozen = true;
    return this;
  }

  match(name: string): T | undefined {
    const hit = this.#exact.get(name);
    if (hit !== undefined) return hit;
    for (const [prefix, v] of this.#prefixes) if (name.startsWith(prefix)) return v;
    return this.#any;
  }
}

/** The index of the pattern serving `name`, or undefined. */
export function matchModelName(patterns: readonly string[], name: string): number | undefined {
  const m = new ModelNameMatcher<number>();
  patterns.forEach((p, i) => {
    m.add(p, i);
  });
  return m.freeze().match(name);
}
