# frozen_string_literal: true

module LeaseMachines
  # A storage operation failed (the database is locked past the busy timeout, read-only, corrupt, in a transaction
  # the store may not commit, ...). The transaction was rolled back: nothing was decided, nothing was written. The
  # database driver's error, when there is one, is the +cause+.
  class StoreError < Error; end

  # A fenced write was refused: its token is not the one of the resource's live lease. +reason+ says why:
  # +:stale_token+ (a newer token was issued: the lease went to another grant), +:not_held+ (the lease was released)
  # or +:expired+ (it ran out, on the store's clock, and was not renewed). +highest+ is the newest token issued for
  # the resource (nil when none was). The write's transaction was rolled back, the block never ran.
  class Fenced < Error
    attr_reader :resource, :token, :highest, :reason

    def initialize(resource:, token:, highest:, reason: :stale_token)
      @resource = resource
      @token = token
      @highest = highest
      @reason = reason
      super("#{resource}: token #{token} #{why}; the write was refused")
    end

    private

    def why
      return "is never issued" if token.zero?

      case reason
      when :not_held then "belongs to a lease that was released"
      when :expired then "belongs to a lease that expired"
      else "is older than the newest issued (#{highest})"
      end
    end
  end
end
