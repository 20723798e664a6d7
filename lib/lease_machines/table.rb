# frozen_string_literal: true

module LeaseMachines
  # Leases on many named resources (Strings), decided by the Authority's rules, each resource with its own token
  # namespace and a revision that rises on every accepted change; plus transfer, reaping, batches, an audit Event
  # per accepted change (the newest +event_capacity+ are kept), metrics and a JSON checkpoint. Times are Float
  # seconds; owners and tokens Integers in 0..2**64-1. Rejections come back as Decisions; malformed input raises
  # before anything changes. See README.md, "Many resources".
  class Table
    # The commands a batch entry may name: the methods of those names.
    BATCH_COMMANDS = %i[acquire reacquire renew release transfer reap].freeze

    # An empty table. +clock_policy+ is +:reject+ or +:clamp+ (see Authority.new); +event_capacity+ (Integer) is how
    # many of the newest events #events keeps.
    def self.new(clock_policy: :reject, event_capacity: 4096) = _new(clock_policy, event_capacity)

    # The table a #to_json document describes, with fresh counters and an empty event log. Raises InvalidDocument
    # for a document that is not format 1 or describes state no table can produce (the message lists every issue).
    def self.from_json(json, clock_policy: :reject, event_capacity: 4096)
      _from_json(json, clock_policy, event_capacity)
    end

    # Grants +resource+ to +owner+ at +now+ for +ttl+ when no lease is live on it, with the next token of the
    # resource. With +expected_revision+ (Integer) it is a compare-and-set: +:revision_mismatch+ unless the
    # resource's revision is that (0 for a resource never changed).
    def acquire(resource:, owner:, now:, ttl:, expected_revision: nil)
      _acquire(resource, owner, now, ttl, expected_revision)
    end

    # Like #acquire, but the owner of the live lease gets a new lease with a greater token (its old token is stale).
    def reacquire(resource:, owner:, now:, ttl:) = _reacquire(resource, owner, now, ttl)

    # Extends the live lease to max(expires_at, now + ttl), same token and issued_at.
    def renew(resource:, owner:, token:, now:, ttl:) = _renew(resource, owner, token, now, ttl)

    # Gives the lease back; the token high-water stays.
    def release(resource:, owner:, token:, now:) = _release(resource, owner, token, now)

    # The holder (+owner+ with +token+) hands the lease to +new_owner+, who gets a new, greater token, issued at
    # +now+ and expiring at +now + ttl+: status +:transferred+. The old token is fenced from then on.
    def transfer(resource:, owner:, token:, new_owner:, now:, ttl:)
      _transfer(resource, owner, token, new_owner, now, ttl)
    end

    # Drops the expired lease record of +resource+ (status +:reaped+); +:occupied+ while it is live, +:not_held+
    # when there is none. The token high-water stays.
    def reap(resource:, now:) = _reap(resource, now)

    # Reaps every lease expired at +now+; returns a Reaping.
    def reap_expired(now:) = _reap_expired(now)

    # Grants +owner+ a leadership lease on the strength of +certificate+ (a QuorumCertificate from
    # Election.certify_votes): only when it is valid (+:no_quorum+), elected +owner+ (+:not_leader+) and its term is
    # greater than every term used for the resource (+:stale_term+). Another owner's live lease is +:occupied+; the
    # owner's own is rotated. The lease records the term.
    def acquire_leadership(resource:, certificate:, owner:, now:, ttl:)
      _acquire_leadership(resource, certificate, owner, now, ttl)
    end

    # Applies +commands+ in order, each a Hash with +:command+ (+:acquire+, +:reacquire+, +:renew+, +:release+,
    # +:transfer+, +:reap+) and that method's keywords; every decision is kept and a rejected command changes
    # nothing. Every entry is checked before any is applied: a malformed one raises and the table is unchanged.
    # Returns a Batch.
    def apply_batch(commands)
      raise TypeError, "commands must be an Array of Hashes, got #{LeaseMachines.shown(commands)}" unless Array === commands

      commands.each_with_index { |command, index| check_batch_entry(command, index) }
      _apply_batch(commands)
    end

    # The lease record of +resource+ (live or expired), or +nil+.
    def lease(resource) = _lease(resource)

    # The revision of +resource+: how many accepted changes it has seen (0 when unknown).
    def revision(resource) = _revision(resource)

    # The greatest token issued for +resource+, or +nil+.
    def last_issued(resource) = _last_issued(resource)

    # The greatest election term used for +resource+, or +nil+.
    def term(resource) = _term(resource)

    # The events kept, oldest first (frozen Array of Event).
    def events = _events

    # The table's Metrics at +now+ (Float seconds; a pure query).
    def metrics(now:) = _metrics(now)

    # The table's state as a JSON document (format 1, see core/FORMAT.md): what Table.from_json reads.
    def to_json(*) = _to_json

    # Each batch command's keywords, read from its method: a batch entry takes exactly those (plus +:command+).
    BATCH_KEYWORDS = BATCH_COMMANDS.to_h do |name|
      parameters = instance_method(name).parameters
      [name, { required: parameters.filter_map { |kind, key| key if kind == :keyreq }.freeze,
               optional: parameters.filter_map { |kind, key| key if kind == :key }.freeze }.freeze]
    end.freeze

    # Which keywords each batch command needs.
    BATCH_REQUIRED = BATCH_KEYWORDS.transform_values { |keywords| keywords[:required] }.freeze

    # Every key a batch entry may have, whatever its command.
    BATCH_KEYS = [:command, *BATCH_KEYWORDS.values.flat_map(&:values).flatten].uniq.freeze

    private


    # Refuses an entry as its method would refuse the call, in Ruby's words, prefixed with where it is:
    # "commands[1] (:renew): missing keywords: :owner, :token", "commands[0] (:acquire): unknown keyword: :token".
    def check_batch_entry(command, index)
      raise TypeError, "commands[#{index}] must be a Hash, got #{LeaseMachines.shown(command)}" unless Hash === command

      keywords = BATCH_KEYWORDS[command[:command]]
      return unless keywords # the extension refuses an unknown command, naming the valid ones

      given = command.keys - [:command]
      missing = keywords[:required] - given
      raise ArgumentError, batch_keyword_error(index, command, "missing", missing) if missing.any?

      unknown = given - keywords[:required] - keywords[:optional]
      raise ArgumentError, batch_keyword_error(index, command, "unknown", unknown) if unknown.any?
    end

    def batch_keyword_error(index, command, what, keys)
      "commands[#{index}] (#{LeaseMachines.shown(command[:command])}): #{what} keyword#{"s" if keys.size > 1}: " \
        "#{keys.map { LeaseMachines.shown(_1) }.join(", ")}"
    end
  end
end
