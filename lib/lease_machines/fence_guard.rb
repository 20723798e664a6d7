# frozen_string_literal: true

module LeaseMachines
  # Storage-side fencing for many resources: accepts a FencedWrite iff its token is at least the highest token it
  # accepted for that resource (equal tokens stay valid for the many writes of one lease). Marks only rise.
  class FenceGuard
    # A guard restored from the FenceMarks it persisted (#marks). Raises ArgumentError for two marks of one resource.
    # Raises TypeError, naming what it got, for anything but an Array of FenceMarks.
    def self.new(marks: []) = _new(marks)

    # The guard a #to_json document describes. Raises InvalidDocument.
    def self.from_json(json) = _from_json(json)

    # Whether +write+ (a FencedWrite) may happen: true, and its token becomes the resource's mark, iff the token is
    # at least the mark; false, and nothing changes, otherwise. Token 0 is never accepted.
    def check(write) = _check(write)

    # The highest token accepted for +resource+, or +nil+.
    def highest(resource) = _highest(resource)

    # Every resource's FenceMark, in resource order: what to persist.
    def marks = _marks

    # The marks as a JSON document (format 1).
    def to_json(*) = _to_json
  end
end
