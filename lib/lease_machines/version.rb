# frozen_string_literal: true

module LeaseMachines
  # The gem's version, kept equal to the version of the `lease-machines` crate it wraps.
  VERSION = "0.1.0"
end
