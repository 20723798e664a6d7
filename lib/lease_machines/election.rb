# frozen_string_literal: true

module LeaseMachines
  # A candidate for leadership: +id+ (an owner Integer) and +priority+ (Integer, higher wins).
  Candidate = Data.define(:id, :priority)

  # One member's vote: +voter+ and +candidate+ (owner Integers), +term+ (Integer) and whether it was +granted+.
  ElectionVote = Data.define(:voter, :candidate, :term, :granted)

  # A member that voted, in one term, for two different candidates: +first+ and +second+ are the two votes.
  Equivocation = Data.define(:voter, :first, :second)

  # What Election.certify_votes decides: +valid+ when one candidate (+leader+) has the votes of +quorum+ of the
  # +members+ distinct members in +term+; +status+ (+:certified+, +:no_members+, +:no_votes+, +:no_quorum+,
  # +:split+), the counted +voters+, and every Equivocation found.
  QuorumCertificate = Data.define(:valid, :status, :leader, :term, :members, :quorum, :voters, :equivocations) do
    def valid? = valid

    # The status for people: "certified", "no quorum", "split", ...
    def message = status.to_s.tr("_", " ")
  end

  # Leader-election helpers (Raft's rules): candidate choice, quorum size and vote certification. A certificate
  # feeds Table#acquire_leadership.
  module Election
    # The strict majority of +members+ (Integer >= 0): +members / 2 + 1+. 0 members gives 1: a quorum an empty
    # membership can never reach.
    def self.quorum_size(members) = _quorum_size(members)

    # The Candidate with the highest priority, ties to the smaller id; +nil+ for none.
    def self.select_candidate(candidates)
      rows = list(candidates, Candidate, "candidates").map { |candidate| [candidate.id, candidate.priority] }
      _select_candidate(rows)&.then { |id, priority| Candidate.new(id:, priority:) }
    end

    # Certifies the +votes+ (ElectionVotes) of +term+ against +members+ (owner Integers): a vote counts only when it
    # is for +term+, granted and cast by a member; a member's repeated votes for one candidate count once; a member
    # that voted for two candidates counts for none and is reported. Returns a QuorumCertificate, valid only with a
    # strict majority of members for one candidate. The order of votes does not matter.
    def self.certify_votes(votes:, members:, term:)
      rows = list(votes, ElectionVote, "votes").map(&:deconstruct)
      certificate(_certify_votes(rows, members, term))
    end

    # @api private
    def self.certificate(row)
      valid, status, leader, term, members, quorum, voters, equivocations = row
      equivocations = equivocations.map do |voter, first, second|
        Equivocation.new(voter:, first: ElectionVote.new(*first), second: ElectionVote.new(*second))
      end
      QuorumCertificate.new(valid:, status:, leader:, term:, members:, quorum:, voters: voters.freeze,
                            equivocations: equivocations.freeze)
    end

    # @api private
    def self.certificate_row(certificate)
      unless certificate.is_a?(QuorumCertificate)
        raise TypeError, "certificate must be a LeaseMachines::QuorumCertificate, got #{certificate.class}"
      end

      row = certificate.deconstruct
      row[7] = certificate.equivocations.map do |equivocation|
        [equivocation.voter, equivocation.first.deconstruct, equivocation.second.deconstruct]
      end
      row
    end

    # @api private
    def self.list(items, type, name)
      raise TypeError, "#{name} must be an Array of #{type}, got #{items.class}" unless items.is_a?(Array)

      items.each do |item|
        raise TypeError, "#{name} must hold #{type}, got #{item.class}" unless item.is_a?(type)
      end
    end

    singleton_class.send(:private, :_quorum_size, :_select_candidate, :_certify_votes, :list, :certificate)
  end
end
