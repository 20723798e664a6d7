# frozen_string_literal: true

module LeaseMachines
  # The base of every exception the gem defines. Input faults raise Ruby's own TypeError, RangeError, ArgumentError
  # and FrozenError instead; rejections never raise.
  class Error < StandardError; end

  # A JSON document that cannot be read: not JSON, not format 1, a missing or unknown field, or values no history
  # can produce (token 0, a lease above the token high-water, ...). The message says which. An ArgumentError, like
  # every input fault.
  class InvalidDocument < ArgumentError; end
end
