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

  # Which database server the options name: [server, url]. +server+ is :postgresql (--postgres, or a postgresql://
  # --database), :mysql (--mysql, or a mysql2:// or mysql:// --database) or nil (SQLite); +url+ is --database when it
  # is such a URL. A usage error when --postgres or --mysql comes with a --database that is not its URL, when both
  # are given, or when the server cannot be used here (the driver gem, or a server for a throwaway one, is missing).
  def database(program, options)
    require_relative "postgres_cluster"
    require_relative "mysql_server"
    url = options[:database] if options[:database]&.match?(%r{\A(?:postgres(?:ql)?|mysql2?)://}i)
    asked = { postgresql: options[:postgres], mysql: options[:mysql] }.select { _2 }.keys
    usage_error(program, "--postgres and --mysql are two databases; give one") if asked.size > 1
    server = asked.first || (url && (url.match?(/\Amysql/i) ? :mysql : :postgresql))
    flag = server == :mysql ? "--mysql" : "--postgres"
    if asked.any? && options[:database] && (!url || url.match?(/\Amysql/i) != (server == :mysql))
      usage_error(program, "#{flag} takes a #{server == :mysql ? "mysql2" : "postgresql"}:// URL as --database, " \
                           "not #{options[:database].inspect}")
    end
    if server
      reason = unavailable(server, url)
      usage_error(program, "#{url ? "--database #{url}" : flag} needs #{server_name(server)}, and #{reason}") if reason
    end
    [server, url]
  end

  # Why +server+ cannot be used here (with +url+, the user's server: only its driver gem counts), or nil.
  def unavailable(server, url)
    if server == :mysql
      url ? MySQLServer.mysql2_unavailable_reason : MySQLServer.unavailable_reason
    else
      url ? PostgresCluster.pg_unavailable_reason : PostgresCluster.unavailable_reason
    end
  end

  def server_name(server) = server == :mysql ? "MySQL" : "PostgreSQL"
end
