# frozen_string_literal: true

module LeaseMachines
  # What Lease, Checkpoint and Cadence add to Data. Each checks its members when Ruby builds one (its #initialize
  # calls the extension's check, which raises as the input rules say), so none is ever allocated bare; each is its
  # own copy (dup and clone return it); and each shows itself as #<LeaseMachines::Lease owner=7 token=1
  # expires_at=30.0>.
  module FrozenValue
    def self.included(value_class)
      value_class.singleton_class.define_method(:allocate) { raise TypeError, "allocator undefined for #{name}" }
    end

    def dup = self
    def clone(freeze: true) = self
    def inspect = "#<#{self.class.name} #{to_h.map { |member, value| "#{member}=#{value.inspect}" }.join(" ")}>"
    alias to_s inspect
  end
end
