/**
 * A Map that keeps at most `max` entries: setting a key makes it the newest, and past `max` the
 * oldest is forgotten. What adapters remember about what they sent or saw (approval cards, chat
 * kinds, reply bubbles, event ids) must not grow with the life of the process.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  readonly max: number;

  constructor(max: number) {
    super();
    this.max = max;
  }

  override set(key: K, value: V): this {
    super.delete(key);
    super.set(key, value);
    if (this.size > this.max) {
      const oldest = this.keys().next();
      if (!oldest.done) super.delete(oldest.value);
    }
    return this;
  }
}
