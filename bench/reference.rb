# frozen_string_literal: true

# A pure-Ruby implementation of the rules the native gem decides by (README.md, "How the authority decides", "The
# fence", "Many resources"), written the way a small pure-Ruby gem would be: plain objects, Data values, the same
# input checks. It exists only so that bench/ can say how much faster the native extension is than Ruby doing the same
# work; bench/agreement.rb checks that it answers exactly as the gem does before anything is timed.
#
# Deliberately left out, because no benchmark or agreement step reaches them: the :clamp clock policy, reacquire,
# transfer, reaping, elections, checkpoints, and the Table's event log and metrics counters (so the pure-Ruby Table
# does less work per command than the native one, and its measured speed-up is a lower bound).
module Reference
  # The largest owner id or token: 2**64 - 1.
  MAX_ID = (2**64) - 1
  # The largest time in seconds the gem accepts: 2**64.
  MAX_SECONDS = 2.0**64

  Decision = Data.define(:status, :lease, :reason)
  Lease = Data.define(:owner, :token, :expires_at)
  TableLease = Data.define(:resource, :owner, :token, :issued_at, :expires_at, :revision, :term)

  # The gem's input rules (README.md, "The rules of input"), with its exception classes.
  module Inputs
    private

    def id!(name, value)
      raise TypeError, "#{name} must be an Integer in 0..2**64-1, got #{value.inspect}" unless value.is_a?(Integer)
      raise RangeError, "#{name} must be in 0..2**64-1, got #{value}" unless value >= 0 && value <= MAX_ID

      value
    end

    def seconds!(name, value)
      value = value.to_f if value.is_a?(Integer)
      unless value.is_a?(Float)
        raise TypeError, "#{name} must be seconds as a Float or an Integer, got #{value.inspect}"
      end
      # NaN fails both comparisons.
      unless value >= 0.0 && value <= MAX_SECONDS
        raise ArgumentError, "#{name} must be finite, non-negative seconds up to 2**64, got #{value}"
      end

      value
    end

    def rejected(reason) = Decision.new(status: :rejected, lease: nil, reason:)
  end

  # One resource, one token namespace, the :reject clock policy.
  class Authority
    include Inputs

    attr_reader :lease, :last_issued, :observed

    def initialize
      @lease = nil
      @last_issued = nil
      @observed = 0.0
    end

    # Granted, with the next token, when no lease is live at +now+ (the requester's own live lease is :occupied too).
    def acquire(owner:, now:, ttl:)
      owner = id!(:owner, owner)
      now = seconds!(:now, now)
      ttl = seconds!(:ttl, ttl)
      refusal = untimely(now, ttl)
      return rejected(refusal) if refusal
      return rejected(:occupied) if @lease && now < @lease.expires_at
      return rejected(:token_space_exhausted) if @last_issued == MAX_ID

      @last_issued = (@last_issued || 0) + 1
      @lease = Lease.new(owner:, token: @last_issued, expires_at: now + ttl)
      Decision.new(status: :granted, lease: @lease, reason: nil)
    end

    # Renewed, same token, expiring at max(expires_at, now + ttl), when +owner+ holds the live lease with +token+.
    def renew(owner:, token:, now:, ttl:)
      owner = id!(:owner, owner)
      token = id!(:token, token)
      now = seconds!(:now, now)
      ttl = seconds!(:ttl, ttl)
      refusal = untimely(now, ttl) || refusal(owner, token, now)
      return rejected(refusal) if refusal

      @lease = @lease.with(expires_at: [@lease.expires_at, now + ttl].max)
      Decision.new(status: :renewed, lease: @lease, reason: nil)
    end

    # Released when +owner+ holds the live lease with +token+; the token high-water stays.
    def release(owner:, token:, now:)
      owner = id!(:owner, owner)
      token = id!(:token, token)
      now = seconds!(:now, now)
      refusal = untimely(now) || refusal(owner, token, now)
      return rejected(refusal) if refusal

      @lease = nil
      Decision.new(status: :released, lease: nil, reason: nil)
    end

    private

    # Why a request at +now+ (for +ttl+ seconds, for one that asks for time) is refused before its lease is looked
    # at, or nil. The clock check comes first: a +now+ before the watermark is :clock_regressed; otherwise the
    # watermark moves up to +now+ (and stays there even if a later check refuses the request).
    def untimely(now, ttl = nil)
      return :clock_regressed if now < @observed

      @observed = now
      return unless ttl
      return :invalid_ttl if ttl.zero?

      :deadline_overflow if now + ttl > MAX_SECONDS
    end

    # Why +owner+ with +token+ does not hold a live lease at +now+, or nil when it does.
    def refusal(owner, token, now)
      if @lease.nil? then :not_held
      elsif @lease.token != token then :stale_token
      elsif @lease.owner != owner then :wrong_owner
      elsif now >= @lease.expires_at then :expired
      end
    end
  end

  # The highest token accepted; accepts a token iff it is at least that. Token 0 is never accepted.
  class Fence
    include Inputs

    attr_reader :highest

    def initialize(highest: nil)
      @highest = highest
    end

    def accept(token)
      token = id!(:token, token)
      return false if token.zero? || (@highest && token < @highest)

      @highest = token
      true
    end
  end

  # Leases on named resources over a Hash: each resource has its own token namespace and a revision raised by every
  # accepted change. One clock watermark for the table, moved only by accepted commands. Only #acquire.
  class Table
    include Inputs

    # What the table keeps per resource.
    Slot = Struct.new(:last_issued, :revision, :lease)

    attr_reader :observed

    def initialize
      @slots = {}
      @observed = 0.0
    end

    def acquire(resource:, owner:, now:, ttl:, expected_revision: nil)
      resource = resource!(resource)
      owner = id!(:owner, owner)
      now = seconds!(:now, now)
      ttl = seconds!(:ttl, ttl)
      expected_revision = id!(:expected_revision, expected_revision) unless expected_revision.nil?
      return rejected(:clock_regressed) if now < @observed
      return rejected(:invalid_ttl) if ttl.zero?
      return rejected(:deadline_overflow) if now + ttl > MAX_SECONDS

      slot = @slots[resource] || Slot.new(nil, 0, nil)
      return rejected(:revision_mismatch) if expected_revision && expected_revision != slot.revision
      return rejected(:occupied) if slot.lease && now < slot.lease.expires_at
      return rejected(:token_space_exhausted) if slot.last_issued == MAX_ID
      return rejected(:revision_space_exhausted) if slot.revision == MAX_ID

      grant(resource, slot, owner, now, ttl)
    end

    def lease(resource) = @slots[resource]&.lease
    def revision(resource) = @slots[resource]&.revision || 0
    def last_issued(resource) = @slots[resource]&.last_issued

    private

    def grant(resource, slot, owner, now, ttl)
      @observed = now
      slot.last_issued = (slot.last_issued || 0) + 1
      slot.revision += 1
      slot.lease = TableLease.new(resource:, owner:, token: slot.last_issued, issued_at: now, expires_at: now + ttl,
                                  revision: slot.revision, term: nil)
      @slots[resource] = slot
      Decision.new(status: :granted, lease: slot.lease, reason: nil)
    end

    def resource!(value)
      raise TypeError, "resource must be a String, got #{value.inspect}" unless value.is_a?(String)
      raise ArgumentError, "resource must be valid UTF-8, got #{value.inspect}" unless value.valid_encoding?
      raise ArgumentError, "resource must not be empty" if value.empty?

      value
    end
  end
end
