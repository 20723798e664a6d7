# frozen_string_literal: true

module LeaseMachines
  # Leader-election helpers (Raft's rules): candidate choice, quorum size and vote certification. A certificate
  # feeds Table#acquire_leadership.
  module Election
    # The strict majority of +members+ (Integer >= 0): +members / 2 + 1+. 0 members gives 1: a quorum an empty
    # membership can never reach.
    def self.quorum_size(members) = _quorum_size(members)

    # The Candidate with the highest priority, ties to the smaller id; +nil+ for none.
    def self.select_candidate(candidates) = _select_candidate(candidates)

    # Certifies the +votes+ (ElectionVotes) of +term+ against +members+ (owner Integers): a vote counts only when it
    # is for +term+, granted and cast by a member; a member's repeated votes for one candidate count once; a member
    # that voted for two candidates counts for none and is reported. Returns a QuorumCertificate, valid only with a
    # strict majority of members for one candidate. The order of votes does not matter.
    def self.certify_votes(votes:, members:, term:) = _certify_votes(votes, members, term)
  end
end
