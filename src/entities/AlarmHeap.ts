/**
 * The timer queue behind `RunnerAlarms`: entries ordered by due time (ties by insertion),
 * a few dozen bytes each, so one runner can hold an alarm for every entity it hosts.
 */
export interface HeapEntry {
  readonly at: number
  readonly seq: number
  readonly key: string
}

/** A binary min-heap on (at, seq) with lazy deletion (stale entries are skipped). */
export class AlarmHeap {
  private readonly items: Array<HeapEntry> = []
  get size() {
    return this.items.length
  }
  peek(): HeapEntry | undefined {
    return this.items[0]
  }
  private less(a: HeapEntry, b: HeapEntry) {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq)
  }
  push(entry: HeapEntry) {
    const items = this.items
    items.push(entry)
    let i = items.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.less(items[i], items[parent])) break
      ;[items[i], items[parent]] = [items[parent], items[i]]
      i = parent
    }
  }
  pop(): HeapEntry | undefined {
    const items = this.items
    const top = items[0]
    const last = items.pop()
    if (items.length > 0 && last !== undefined) {
      items[0] = last
      let i = 0
      while (true) {
        const left = 2 * i + 1
        const right = left + 1
        let smallest = i
        if (left < items.length && this.less(items[left], items[smallest])) smallest = left
        if (right < items.length && this.less(items[right], items[smallest])) smallest = right
        if (smallest === i) break
        ;[items[i], items[smallest]] = [items[smallest], items[i]]
        i = smallest
      }
    }
    return top
  }
}
