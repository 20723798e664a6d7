# frozen_string_literal: true

require "lease_machines"
require_relative "reference"

# Drives the native gem and the pure-Ruby Reference through the same seeded random requests and compares every answer
# (status, reason, lease owner, token and expiry, issued_at and revision for a table) and the state behind it (token
# high-water, clock watermark, fence mark). bench/ runs it before timing anything, so that "faster than pure Ruby"
# compares equal work; a single difference aborts the run.
#
# Times are multiples of 1/256 s: exact as Floats and as whole nanoseconds, so the native deadline (nanoseconds,
# rounded up to the Float grid) and the reference's Float sum are the same number and can be compared with ==.
module Agreement
  # Random requests per subject (authority, fence, table).
  STEPS = Integer(ENV.fetch("BENCH_AGREEMENT_STEPS", "3000"))
  SEED = Integer(ENV.fetch("BENCH_SEED", "20260101"))
  GRID = 1.0 / 256

  module_function

  # Checks the three subjects; returns a one-line summary or aborts with the first difference.
  def check!(steps: STEPS)
    random = Random.new(SEED)
    authority(random, steps)
    fence(random, steps)
    table(random, steps)
    "reference agrees with the native gem on #{3 * steps} random requests (seed #{SEED})"
  end

  # Acquire, renew and release by three owners, with stale and current tokens, clock regressions and zero TTLs.
  def authority(random, steps)
    native = LeaseMachines::Authority.new(clock_policy: :reject)
    reference = Reference::Authority.new
    now = 0.0
    steps.times do |step|
      now = next_now(random, now)
      owner = random.rand(1..3)
      ttl = random.rand(8).zero? ? 0.0 : random.rand(1..2048) * GRID
      token = pick_token(random, reference.last_issued)
      request, args =
        case random.rand(3)
        when 0 then [:acquire, { owner:, now:, ttl: }]
        when 1 then [:renew, { owner:, token:, now:, ttl: }]
        else [:release, { owner:, token:, now: }]
        end
      compare!("Authority##{request}", step, args, native.public_send(request, **args),
               reference.public_send(request, **args))
      same!("Authority#last_issued", step, args, native.last_issued, reference.last_issued)
      same!("Authority#observed", step, args, native.observed, reference.observed)
    end
  end

  # Tokens below, at and above the mark, and token 0.
  def fence(random, steps)
    highest = random.rand(1..4)
    native = LeaseMachines::Fence.new(highest:)
    reference = Reference::Fence.new(highest:)
    steps.times do |step|
      token = random.rand(32).zero? ? 0 : (reference.highest + random.rand(-2..1)).clamp(1..)
      same!("Fence#accept", step, { token: }, native.accept(token), reference.accept(token))
      same!("Fence#highest", step, { token: }, native.highest, reference.highest)
    end
  end

  # Acquire on three resources, with and without a revision precondition (right or off by one).
  def table(random, steps)
    native = LeaseMachines::Table.new
    reference = Reference::Table.new
    now = 0.0
    steps.times do |step|
      now = next_now(random, now)
      resource = %w[alpha beta gamma].sample(random:)
      ttl = random.rand(8).zero? ? 0.0 : random.rand(1..2048) * GRID
      args = { resource:, owner: random.rand(1..3), now:, ttl: }
      args[:expected_revision] = reference.revision(resource) + random.rand(-1..1).clamp(0..) if random.rand(3).zero?
      compare!("Table#acquire", step, args, native.acquire(**args), reference.acquire(**args))
      same!("Table#last_issued", step, args, native.last_issued(resource), reference.last_issued(resource))
      same!("Table#revision", step, args, native.revision(resource), reference.revision(resource))
    end
  end

  # Mostly forward in steps of up to 2 s, sometimes standing still, sometimes (1 in 16) back by up to 1 s.
  def next_now(random, now)
    step = random.rand(16).zero? ? -random.rand(1..256) : random.rand(0..512)
    [now + (step * GRID), 0.0].max
  end

  # The current token, the one before or after it, or 0 (never issued).
  def pick_token(random, last_issued)
    last = last_issued || 0
    [last, last, last, last - 1, last + 1, 0].sample(random:).clamp(0..)
  end

  def compare!(what, step, args, native, reference)
    same!("#{what} status", step, args, native.status, reference.status)
    same!("#{what} reason", step, args, native.reason, reference.reason)
    same!("#{what} lease", step, args, native.lease.nil?, reference.lease.nil?)
    return unless native.lease

    fields = native.lease.is_a?(LeaseMachines::Lease) ? %i[owner token expires_at] : Reference::TableLease.members
    fields.each do |field|
      same!("#{what} lease.#{field}", step, args, native.lease.public_send(field), reference.lease.public_send(field))
    end
  end

  def same!(what, step, args, native, reference)
    return if native == reference

    abort <<~MESSAGE
      bench/: THE PURE-RUBY REFERENCE DISAGREES WITH THE NATIVE GEM; nothing was timed.
        #{what} at step #{step} (seed #{SEED}), arguments #{args.inspect}:
        native    #{native.inspect}
        reference #{reference.inspect}
      Fix bench/reference.rb (or report the gem's bug) before comparing their speed.
    MESSAGE
  end
end
