# frozen_string_literal: true

require "optparse"

# The command-line rules bin/worker-seven and bin/nightly-report share with the lease_machines command: a usage error
# (a bad or unknown option, an extra argument, a value out of range) is one line on stderr, never a backtrace, with
# exit status 2; 0 and 1 are the verdict's (safe, unsafe).
module CommandLine
  module_function

  # Prints +message+ on one line, as +program+'s, and exits 2.
  def usage_error(program, message)
    warn "#{program}: #{message.gsub(/\s*\n\s*/, " ")}; see bin/#{program} --help"
    exit 2
  end

  # Parses +argv+ with +parser+ (given a -h/--help that prints it and exits 0), for a command that takes options
  # only: a parse error or any argument left over is a usage error of +program+'s.
  def parse(program, parser, argv)
    parser.on("-h", "--help", "show this help") do
      puts parser
      exit
    end
    arguments = begin
      parser.parse(argv)
    rescue OptionParser::ParseError => e
      usage_error(program, parse_error(e))
    end
    return if arguments.empty?

    usage_error(program, "unexpected argument #{arguments.first.inspect} (it takes options only)")
  end

  # OptionParser's message for +error+ on one line: its "Did you mean?" candidates (long options) in parentheses.
  def parse_error(error)
    reason, *candidates = error.message.lines.map(&:strip)
    candidates = candidates.join(" ").delete_prefix("Did you mean?").split
    candidates.empty? ? reason : "#{reason} (did you mean #{candidates.map { "--#{_1}" }.join(" or ")}?)"
  end

  # The option's argument +text+ as a number in +range+ (of Integers or of Floats); anything else (malformed, out of
  # range, not finite) an OptionParser::InvalidArgument saying what it +must+ be, which OptionParser prefixes with
  # the option's name.
  def number(text, range, must)
    number = begin
      range.begin.is_a?(Integer) ? Integer(text, 10) : Float(text)
    rescue ArgumentError
      nil
    end
    return number if number && range.cover?(number)

    raise OptionParser::InvalidArgument, "#{text} (must be #{must})"
  end

  # Which database the options name: [postgres?, url]. +url+ is --database when it is a postgresql:// URL; PostgreSQL
  # is asked for by --postgres or such a URL. A usage error when --postgres comes with a --database that is not a
  # URL, or when PostgreSQL cannot be used here (the pg gem, or a server for a throwaway cluster, is missing).
  def database(program, options)
    require_relative "postgres_cluster"
    url = options[:database] if options[:database]&.match?(%r{\Apostgres(?:ql)?://}i)
    if options[:postgres] && options[:database] && !url
      usage_error(program, "--postgres takes a postgresql:// URL as --database, not #{options[:database].inspect}")
    end
    postgres = options[:postgres] || !url.nil?
    if postgres
      reason = url ? PostgresCluster.pg_unavailable_reason : PostgresCluster.unavailable_reason
      usage_error(program, "#{url ? "--database #{url}" : "--postgres"} needs PostgreSQL, and #{reason}") if reason
    end
    [postgres, url]
  end
end
