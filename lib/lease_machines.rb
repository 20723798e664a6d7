# frozen_string_literal: true

require_relative "lease_machines/version"

# Time-limited ownership with fencing tokens. See README.md for the story and the rules; every decision comes from
# the `lease-machines` Rust crate through the native extension loaded below.
module LeaseMachines
  # The base of every exception the gem defines. Input faults raise Ruby's own TypeError, RangeError, ArgumentError
  # and FrozenError instead; rejections never raise.
  class Error < StandardError; end

  # A JSON document that cannot be read: not JSON, not format 1, a missing or unknown field, or values no history
  # can produce (token 0, a lease above the token high-water, ...). The message says which. An ArgumentError, like
  # every input fault.
  class InvalidDocument < ArgumentError; end

  # The answer to every Authority request.
  #
  # - +status+: +:granted+, +:renewed+, +:released+ or +:rejected+ (a Table also answers +:transferred+ and
  #   +:reaped+).
  # - +lease+: the Lease a grant or a renewal carries (a TableLease from a Table, also for a transfer); +nil+
  #   otherwise.
  # - +reason+: why a request was refused, one of REASONS (+:occupied+, +:stale_token+, +:expired+, ...); +nil+
  #   otherwise.
  #
  # Refusals are values, never exceptions. Frozen, compared by value, shareable across Ractors.
  Decision = Data.define(:status, :lease, :reason) do
    # Every status, in the order a lease goes through them.
    def self.statuses = %i[granted renewed transferred released reaped rejected]

    def granted? = status == :granted
    def renewed? = status == :renewed
    def transferred? = status == :transferred
    def released? = status == :released
    def reaped? = status == :reaped
    def rejected? = status == :rejected
    # True unless the request was refused.
    def accepted? = status != :rejected
  end
end

# Fat native gems carry one extension per Ruby minor under lib/lease_machines/X.Y/; a source build puts it at
# lib/lease_machines/lease_machines_native.so. Only a missing fat extension falls back to the source build: one that
# is there but cannot load (a glibc older than 2.17, say) raises its own LoadError, which names the cause.
fat_extension = "lease_machines/#{RUBY_VERSION[/\A\d+\.\d+/]}/lease_machines_native"
begin
  require fat_extension
rescue LoadError => e
  raise unless e.path == fat_extension

  require "lease_machines/lease_machines_native"
end

module LeaseMachines
  # REASONS, every reason a request can be refused with (the Symbols Decision#reason returns), comes from the
  # extension, in the core's order.

  # Lease, Checkpoint and Cadence are immutable: each is its own copy.
  module FrozenValue
    def dup = self
    def clone(freeze: true) = self
  end

  # The single authority for one resource: decides who holds the lease and until when. See README.md, "How the
  # Authority decides", for the rules and the rejection table.
  class Authority
    # A fresh authority for a namespace that has never issued a token. +clock_policy+ is +:reject+ (a +now+ before
    # the latest one seen is refused as +:clock_regressed+) or +:clamp+ (evaluated at the latest one instead).
    # Raises ArgumentError for an unknown policy, TypeError for a non-Symbol.
    def self.new(clock_policy: :reject) = _new(clock_policy)

    # An authority that continues the history in +checkpoint+ (a Checkpoint), deciding every later request as the
    # authority that produced it would have.
    def self.restore(checkpoint, clock_policy: :reject) = _restore(checkpoint, clock_policy)

    # Asks for the lease for +owner+ (Integer, 0..2**64-1) at +now+ (Float seconds) for +ttl+ (Float seconds).
    # Granted with a token greater than every earlier one when no lease is live at +now+.
    def acquire(owner:, now:, ttl:) = _acquire(owner, now, ttl)

    # Like #acquire, but the owner of the live lease gets a new lease with a new, greater token (the old token is
    # stale from then on). Another owner's live lease is still +:occupied+.
    def reacquire(owner:, now:, ttl:) = _reacquire(owner, now, ttl)

    # Extends the current lease to max(expires_at, now + ttl), keeping its token. Needs the current owner and token.
    def renew(owner:, token:, now:, ttl:) = _renew(owner, token, now, ttl)

    # Gives the current lease back. Needs the current owner and token.
    def release(owner:, token:, now:) = _release(owner, token, now)

    private :_acquire, :_reacquire, :_renew, :_release
  end

  # The check at the protected resource: remembers the highest token it accepted and refuses older ones.
  class Fence
    # A fence whose high-water mark is +highest+ (+nil+, or the Integer it persisted before a restart).
    def self.new(highest: nil) = _new(highest)
  end

  # A granted lease: +owner+ (Integer), +token+ (Integer) and +expires_at+ (Float seconds from the history's clock
  # origin). Live while +now < expires_at+. Building one from a stored row grants nothing.
  class Lease
    def self.new(owner:, token:, expires_at:) = _new(owner, token, expires_at)
    include FrozenValue
  end

  # The whole state of an Authority: +last_issued+ (the token high-water, Integer or nil), +lease+ (Lease or nil)
  # and +observed+ (the clock watermark, Float seconds). Raises ArgumentError for parts no history can produce: a
  # lease whose token was never issued.
  class Checkpoint
    def self.new(last_issued:, lease:, observed:) = _new(last_issued, lease, observed)

    # The checkpoint read from its JSON document (format 1, see core/FORMAT.md). Raises InvalidDocument.
    def self.from_json(json) = _from_json(json)

    # The checkpoint as a JSON document (format 1): times in integer nanoseconds, nothing rounded.
    def to_json(*) = _to_json

    include FrozenValue
  end

  # A holder's renewal schedule, in Float seconds. Raises ArgumentError unless 0 < renew_every < ttl and
  # warn_before < ttl.
  class Cadence
    def self.new(ttl:, renew_every:, warn_before:) = _new(ttl, renew_every, warn_before)
    include FrozenValue
  end

  # The holder's side of one lease, on the holder's own clock: when to renew, how much to trust the lease, when to
  # stop. Deadlines count from the instant the confirmed request was sent, never from when its reply arrived.
  class Holder
    # A holder of a fresh grant with +token+, whose acquire request was sent at +at+ (Float seconds).
    def self.new(token:, at:, cadence:) = _new(token, at, cadence)

    # Records that a renewal request is sent at +now+. False once expired or fenced.
    def refresh(now:) = _refresh(now)

    # Records the authority's confirmation of +token+, received at +at+. False for a stale (older) token.
    def confirm(token:, at:) = _confirm(token, at)

    # Records a new grant with a strictly newer +token+, requested at +at+.
    def reacquire(token:, at:) = _reacquire(token, at)

    # Whether a renewal should be sent at +now+.
    def renewal_due?(now:) = _renewal_due(now)

    # Whether the lease should not be trusted at +now+.
    def at_risk?(now:) = _at_risk(now)

    private :_refresh, :_confirm, :_reacquire, :_renewal_due, :_at_risk
  end

  [Authority, Fence, Lease, Checkpoint, Cadence, Holder].each do |klass|
    klass.singleton_class.send(:private, :_new)
  end
  Authority.singleton_class.send(:private, :_restore)
  Checkpoint.singleton_class.send(:private, :_from_json)
  Checkpoint.send(:private, :_to_json)
end

require_relative "lease_machines/table"
require_relative "lease_machines/election"
require_relative "lease_machines/simulation"
